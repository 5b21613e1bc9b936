"""`python -m vx_eval` runs the command line."""

from vx_eval.cli import main

main()
