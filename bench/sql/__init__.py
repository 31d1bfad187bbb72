"""Server-side benchmarks driven by pgbench: pgmbus against raw SQL and its peers."""
