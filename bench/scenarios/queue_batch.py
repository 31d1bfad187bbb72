"""Post 100 messages per call and consume 100 per call, one producer and one consumer at once.

Candidate: ``mbus.postn_<q>(jsonb[])`` and ``mbus.consumen_<q>_by_default(100)``. Baseline: a
multi-row INSERT from an array and ``DELETE ... SKIP LOCKED LIMIT 100`` on a raw table.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from bench.harness import Measurement
from bench.scenarios._queues import RAW_CLAIM, RAW_INSERT_MANY, fresh_queue, produce_consume

name = "queue_batch"
unit = "messages"
goal = "pgmbus >= 0.8x raw multi-row INSERT/DELETE (100 per call)"
default_size = 50_000
BATCH = 100


def setup(dsn: str, size: int) -> None:
    fresh_queue(dsn, "bench")


def _batch(i: int) -> list[Jsonb]:
    return [Jsonb({"n": i + k, "body": "x" * 64}) for k in range(BATCH)]


def _post(conn: psycopg.Connection[Any], i: int) -> int:
    conn.execute("SELECT count(*) FROM mbus.postn_bench(%s)", (_batch(i),))
    return BATCH


def _claim(conn: psycopg.Connection[Any]) -> int:
    rows = conn.execute("SELECT id FROM mbus.consumen_bench_by_default(%s)", (BATCH,)).fetchall()
    conn.commit()
    return len(rows)


def _raw_post(conn: psycopg.Connection[Any], i: int) -> int:
    conn.execute(RAW_INSERT_MANY, (_batch(i),))
    return BATCH


def _raw_claim(conn: psycopg.Connection[Any]) -> int:
    rows = conn.execute(RAW_CLAIM, (BATCH,)).fetchall()
    conn.commit()
    return len(rows)


def candidate(dsn: str, size: int) -> Measurement:
    fresh_queue(dsn, "bench")
    seconds = produce_consume(dsn, size, 1, 1, _post, _claim)
    return Measurement(size, seconds)


def baseline(dsn: str, size: int) -> Measurement:
    fresh_queue(dsn, "bench")
    seconds = produce_consume(dsn, size, 1, 1, _raw_post, _raw_claim)
    return Measurement(size, seconds)
