"""vx-eval's built-in plugins, each registered through the `vx_eval` entry-point group."""
