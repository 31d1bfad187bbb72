"""pgmbus benchmarks: each scenario runs pgmbus and a raw-SQL baseline of the same work."""
