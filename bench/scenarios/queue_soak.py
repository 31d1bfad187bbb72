"""Many messages through a busy queue with default autovacuum: throughput and size stay flat.

Two producers post 50 per call while two consumers claim 50 per transaction, in ten windows of
``size / 10`` messages each. The default size is 100k (a few minutes here); the issue's full run
is ``python -m bench queue_soak --size 1000000 --rounds 1``. ``extra`` carries the first and
last window's rate, their ratio, and the largest and final table + index size in MB (the
candidate's delivery table vs the raw table).
"""

from __future__ import annotations

from typing import Any

import psycopg

from bench.harness import Measurement
from bench.scenarios._queues import BatchWork, fresh_queue, produce_consume

name = "queue_soak"
unit = "messages"
goal = "throughput and table+index size flat over the run (default 100k; --size 1000000)"
default_size = 100_000
WINDOWS = 10
BATCH = 50
WORK = BatchWork("soak", BATCH, body_size=100)


def setup(dsn: str, size: int) -> None:
    fresh_queue(dsn, "soak")


def _soak(dsn: str, size: int, table: str, post: Any, claim: Any) -> Measurement:
    fresh_queue(dsn, "soak")
    per_window = max(BATCH * 2, size // WINDOWS)
    rates: list[float] = []
    sizes: list[float] = []
    total_seconds = 0.0
    with psycopg.connect(dsn, autocommit=True) as admin:
        for _ in range(WINDOWS):
            seconds = produce_consume(dsn, per_window, 2, 2, post, claim)
            total_seconds += seconds
            rates.append(per_window / seconds)
            row = admin.execute("SELECT pg_total_relation_size(%s::regclass)", (table,)).fetchone()
            sizes.append((row[0] if row else 0) / 1e6)
    return Measurement(
        per_window * WINDOWS,
        total_seconds,
        {
            "first_window_rate": rates[0],
            "last_window_rate": rates[-1],
            "last_over_first": rates[-1] / rates[0],
            "size_mb_max": max(sizes),
            "size_mb_end": sizes[-1],
        },
    )


def candidate(dsn: str, size: int) -> Measurement:
    return _soak(dsn, size, "mbus.q_soak", WORK.post, WORK.claim)


def baseline(dsn: str, size: int) -> Measurement:
    return _soak(dsn, size, "bench_raw_queue", WORK.raw_post, WORK.raw_claim)
