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
from psycopg.types.json import Jsonb

from bench.harness import Measurement
from bench.scenarios._queues import RAW_CLAIM, RAW_INSERT_MANY, fresh_queue, produce_consume

name = "queue_soak"
unit = "messages"
goal = "throughput and table+index size flat over the run (default 100k; --size 1000000)"
default_size = 100_000
WINDOWS = 10
BATCH = 50


def setup(dsn: str, size: int) -> None:
    fresh_queue(dsn, "soak")


def _batch(i: int) -> list[Jsonb]:
    return [Jsonb({"n": i + k, "body": "x" * 100}) for k in range(BATCH)]


def _post(conn: psycopg.Connection[Any], i: int) -> int:
    conn.execute("SELECT count(*) FROM mbus.postn_soak(%s)", (_batch(i),))
    return BATCH


def _claim(conn: psycopg.Connection[Any]) -> int:
    rows = conn.execute("SELECT id FROM mbus.consumen_soak_by_default(%s)", (BATCH,)).fetchall()
    conn.commit()
    return len(rows)


def _raw_post(conn: psycopg.Connection[Any], i: int) -> int:
    conn.execute(RAW_INSERT_MANY, (_batch(i),))
    return BATCH


def _raw_claim(conn: psycopg.Connection[Any]) -> int:
    rows = conn.execute(RAW_CLAIM, (BATCH,)).fetchall()
    conn.commit()
    return len(rows)


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
    return _soak(dsn, size, "mbus.q_soak", _post, _claim)


def baseline(dsn: str, size: int) -> Measurement:
    return _soak(dsn, size, "bench_raw_queue", _raw_post, _raw_claim)
