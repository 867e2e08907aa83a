"""Benchmarks that print tables: provision against the hand recipe, scale across hosts, serving."""
