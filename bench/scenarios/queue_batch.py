"""Post 100 messages per call and consume 100 per call, one producer and one consumer at once.

Candidate: ``mbus.postn_<q>(jsonb[])`` and ``mbus.consumen_<q>_by_default(100)``. Baseline: a
multi-row INSERT from an array and ``DELETE ... SKIP LOCKED LIMIT 100`` on a raw table.
"""

from __future__ import annotations

from bench.harness import Measurement
from bench.scenarios._queues import BatchWork, fresh_queue, produce_consume

name = "queue_batch"
unit = "messages"
goal = "pgmbus >= 0.8x raw multi-row INSERT/DELETE (100 per call)"
default_size = 50_000
BATCH = 100
WORK = BatchWork("bench", BATCH, body_size=64)


def setup(dsn: str, size: int) -> None:
    fresh_queue(dsn, "bench")


def candidate(dsn: str, size: int) -> Measurement:
    fresh_queue(dsn, "bench")
    seconds = produce_consume(dsn, size, 1, 1, WORK.post, WORK.claim)
    return Measurement(size, seconds)


def baseline(dsn: str, size: int) -> Measurement:
    fresh_queue(dsn, "bench")
    seconds = produce_consume(dsn, size, 1, 1, WORK.raw_post, WORK.raw_claim)
    return Measurement(size, seconds)
