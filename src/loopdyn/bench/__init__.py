"""Benchmarks run by ``loopdyn bench``."""
