"""Streams at the server, driven by pgbench: pgmbus vs a raw INSERT and PgQ.

Paths: publish 1 event per transaction, 100 events per statement (``publish_batch`` and one
``publish`` per row), and a consumer group reading 1,000 events per transaction. See
``bench/sql/runner.py`` for the method and ``docs/benchmarks.md`` for the figures.
"""

from __future__ import annotations

from bench.sql import runner, streams
from bench.sql.model import Options

name = "sql_streams"
unit = "events"
goal = "pgbench: publish >= 0.8x raw INSERT and >= 1.2x PgQ insert_event; group read >= 1x PgQ"
default_size = 0
pgbench = True


def run_report(opts: Options, progress: runner.Progress) -> runner.SqlReport:
    """Run the stream paths and return their rows."""
    return runner.run(name, streams.SQLFILE, streams.PATHS, opts, progress)
