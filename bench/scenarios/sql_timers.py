"""Timers at the server, driven by pgbench: pgmbus vs a raw table with what a claim needs.

Paths: create 1 timer per transaction, 100 per call (a JSON array, as the HTTP API receives
them), and claim 100 due timers then record them. See ``bench/sql/runner.py`` for the method
and ``docs/benchmarks.md`` for the figures.
"""

from __future__ import annotations

from bench.sql import runner, timers
from bench.sql.model import Options

name = "sql_timers"
unit = "timers"
goal = "pgbench: create and claim + record against a raw table (the price of each guarantee)"
default_size = 0
pgbench = True


def run_report(opts: Options, progress: runner.Progress) -> runner.SqlReport:
    """Run the timer paths and return their rows."""
    return runner.run(name, timers.SQLFILE, timers.PATHS, opts, progress)
