"""Benchmarks and datasets used to measure Baton."""
