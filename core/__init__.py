"""The small core of vx-eval: hooks, config, golden data, measures, the run and its report."""
