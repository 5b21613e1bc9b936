"""Helpers for testing engine plugins (see `vx_eval.testing.conformance`)."""
