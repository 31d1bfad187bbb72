"""Queues at the server, driven by pgbench: pgmbus vs raw SQL, PgQueuer, procrastinate, PGMQ.

Paths: post 1 message per transaction, pop (consume 1 per transaction), lease + ack, post 100
per call, consume 100 per call. Every side runs in its own fresh database on a server this
scenario starts; see ``bench/sql/runner.py`` for the method and ``docs/benchmarks.md`` for the
figures.
"""

from __future__ import annotations

from bench.sql import queues, runner
from bench.sql.model import Options

name = "sql_queues"
unit = "messages"
goal = "pgbench: post/pop/lease >= 0.8x raw SQL and >= 1.3x PGMQ; batches of 100 >= 0.8x raw"
default_size = 0
pgbench = True


def run_report(opts: Options, progress: runner.Progress) -> runner.SqlReport:
    """Run the queue paths and return their rows."""
    return runner.run(name, queues.SQLFILE, queues.PATHS, opts, progress)
