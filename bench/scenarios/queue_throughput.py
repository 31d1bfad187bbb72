"""Post + consume, one message per transaction, 1/4/8 producers and consumers at once.

Candidate: ``mbus.post_<q>`` and ``mbus.consume_<q>_by_default()``. Baseline: a raw table with
INSERT and ``DELETE ... FOR UPDATE SKIP LOCKED LIMIT 1``. The headline rate is the 4x4 run; the
1x1 and 8x8 rates are in ``extra`` (messages/s). ``size`` messages per configuration.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from bench.harness import Measurement
from bench.scenarios._queues import RAW_CLAIM, RAW_INSERT, fresh_queue, produce_consume

name = "queue_throughput"
unit = "messages"
goal = "pgmbus >= 0.8x raw INSERT + DELETE SKIP LOCKED (1/4/8 producers and consumers)"
default_size = 10_000  # 3,000 gave 8x8 runs of ~1.3 s, too short to measure
CONFIGS = (1, 4, 8)


def setup(dsn: str, size: int) -> None:
    fresh_queue(dsn, "bench")


def _post(conn: psycopg.Connection[Any], i: int) -> int:
    conn.execute("SELECT mbus.post_bench(%s)", (Jsonb({"n": i, "body": "x" * 64}),))
    return 1


def _claim(conn: psycopg.Connection[Any]) -> int:
    rows = conn.execute("SELECT id FROM mbus.consume_bench_by_default()").fetchall()
    conn.commit()
    return len(rows)


def _raw_post(conn: psycopg.Connection[Any], i: int) -> int:
    conn.execute(RAW_INSERT, (Jsonb({"n": i, "body": "x" * 64}),))
    return 1


def _raw_claim(conn: psycopg.Connection[Any]) -> int:
    rows = conn.execute(RAW_CLAIM, (1,)).fetchall()
    conn.commit()
    return len(rows)


def _measure(dsn: str, size: int, post: Any, claim: Any) -> Measurement:
    rates: dict[str, float] = {}
    for n in CONFIGS:
        fresh_queue(dsn, "bench")
        seconds = produce_consume(dsn, size, n, n, post, claim)
        rates[f"rate_{n}x{n}"] = size / seconds
    return Measurement(size, size / rates["rate_4x4"], rates)


def candidate(dsn: str, size: int) -> Measurement:
    return _measure(dsn, size, _post, _claim)


def baseline(dsn: str, size: int) -> Measurement:
    return _measure(dsn, size, _raw_post, _raw_claim)
