"""What a dependency (consume_after) costs a Python client, post to release.

One cycle, each statement its own transaction: post a message A, post a message B that waits
for A (``consume_after``), consume A (its commit releases B), consume B. Candidate: that cycle.
Baseline: the same two posts and two consumes without ``consume_after``. Both sides commit with
``synchronous_commit = off`` (the WAL flush would hide the difference). ``size`` cycles; the
rate counts messages (two per cycle). The ratio is the price of the guarantee as a Python
client sees it; the server's side of it is the pgbench path ``sql_queues --paths dep``.
"""

from __future__ import annotations

import time

import psycopg
from psycopg.types.json import Jsonb

from bench.harness import Measurement
from bench.scenarios._queues import fresh_queue

name = "dependency_cycle"
unit = "messages"
goal = ">= 0.5x the same cycle without consume_after (a dependency costs less than the cycle)"
default_size = 2_000

_POST = "SELECT mbus.post_depc(%s)"
_POST_AFTER = "SELECT mbus.post_depc(%s, consume_after => %s::text)"
_CONSUME = "SELECT id FROM mbus.consume_depc_by_default()"


def setup(dsn: str, size: int) -> None:
    del size
    fresh_queue(dsn, "depc")


def _cycles(dsn: str, size: int, *, wait: bool) -> Measurement:
    fresh_queue(dsn, "depc")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")
        body = Jsonb({"order": 4242, "status": "created"})
        start = time.perf_counter()
        for _ in range(size):
            row = conn.execute(_POST, (body,), prepare=True).fetchone()
            assert row is not None
            if wait:
                conn.execute(_POST_AFTER, (body, row[0]), prepare=True)
            else:
                conn.execute(_POST, (body,), prepare=True)
            for _ in range(2):  # A, then B (released by A's commit)
                got = conn.execute(_CONSUME, prepare=True).fetchall()
                assert len(got) == 1, "a consume found nothing: B was not released"
        seconds = time.perf_counter() - start
    return Measurement(2 * size, seconds)


def candidate(dsn: str, size: int) -> Measurement:
    return _cycles(dsn, size, wait=True)


def baseline(dsn: str, size: int) -> Measurement:
    return _cycles(dsn, size, wait=False)
