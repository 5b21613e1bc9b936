"""The Evaluate server (`vx-eval serve`): the run's page and the REST routes over a store of runs."""
