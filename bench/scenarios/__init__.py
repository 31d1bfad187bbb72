"""Benchmark scenarios: one module each, discovered by name."""
