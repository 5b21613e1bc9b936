"""Benchmarks: speed and memory, each against a reference measured in the same run."""
