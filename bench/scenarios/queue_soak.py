"""Many messages through a busy queue with default autovacuum: throughput and size stay flat.

Two producers post 50 per call while two consumers claim 50 per transaction, in ten windows of
``size / 10`` messages each; every window ends with the queue drained. The default size is 100k
(a few minutes here); the issue's full run is ``python -m bench queue_soak --size 1000000
--rounds 1``. The pgmbus consumers run the queue's storage upkeep the way ``Bus`` consumers and
the worker do (``mbus.rotate_queue(q, 20)`` in autocommit once a second; nothing else, no
VACUUM, server settings untouched). ``extra`` carries each window's rate (``wNN_rate``) and
table + index size in MB at its end (``wNN_mb``), the first and last window's rate and their
ratio, the mean of the last three windows over the first three, the largest and final size,
the final heap and index sizes, and the size one window's
messages take in the table (``window_mb``: the size with one window posted and none consumed).
"""

from __future__ import annotations

import threading
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
ROTATE_EVERY = 1.0  # seconds, as Bus consumers do (Bus(rotate_every=...))
WORK = BatchWork("soak", BATCH, body_size=100)

# Heap and index bytes of a table, or of all partitions of a partitioned table.
SIZES = """
SELECT coalesce(sum(pg_table_size(r)), 0) AS heap, coalesce(sum(pg_indexes_size(r)), 0) AS idx
FROM (SELECT t.relid AS r FROM pg_partition_tree(%(t)s::regclass) AS t WHERE t.isleaf
      UNION ALL
      SELECT %(t)s::regclass WHERE NOT EXISTS (SELECT 1 FROM pg_partition_tree(%(t)s::regclass)))
     AS s"""


def setup(dsn: str, size: int) -> None:
    fresh_queue(dsn, "soak")


def _sizes(conn: psycopg.Connection[Any], table: str) -> tuple[float, float]:
    row = conn.execute(SIZES, {"t": table}).fetchone()
    return (float(row[0]) / 1e6, float(row[1]) / 1e6) if row else (0.0, 0.0)


def _window_mb(dsn: str, per_window: int, table: str, post: Any, claim: Any) -> float:
    """Table + index MB of one window's messages posted at once (then consumed)."""
    fresh_queue(dsn, "soak")
    with psycopg.connect(dsn, autocommit=True) as conn:
        i = 0
        while i < per_window:
            i += post(conn, i)
        heap, idx = _sizes(conn, table)
    with psycopg.connect(dsn) as conn:
        while claim(conn):
            pass
    return heap + idx


def _rotator(dsn: str, stop: threading.Event, counts: dict[str, float]) -> None:
    """What a pgmbus consumer does besides claiming: the queue's upkeep, once a second."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not stop.wait(ROTATE_EVERY):
            row = conn.execute("SELECT mbus.rotate_queue('soak', 20)").fetchone()
            report = row[0] if row else {}
            counts["rotate_calls"] += 1
            counts["rotate_busy"] += len(report.get("busy", []))


def _soak(dsn: str, size: int, table: str, post: Any, claim: Any, upkeep: bool) -> Measurement:
    per_window = max(BATCH * 2, size // WINDOWS)
    window_mb = _window_mb(dsn, per_window, table, post, claim)
    fresh_queue(dsn, "soak")
    rates: list[float] = []
    sizes: list[float] = []
    total_seconds = 0.0
    extra: dict[str, float] = {"window_mb": window_mb}
    stop = threading.Event()
    counts = {"rotate_calls": 0.0, "rotate_busy": 0.0}
    rotator = threading.Thread(target=_rotator, args=(dsn, stop, counts)) if upkeep else None
    if rotator:
        rotator.start()
    try:
        with psycopg.connect(dsn, autocommit=True) as admin:
            for w in range(WINDOWS):
                seconds = produce_consume(dsn, per_window, 2, 2, post, claim)
                total_seconds += seconds
                rates.append(per_window / seconds)
                heap, idx = _sizes(admin, table)
                sizes.append(heap + idx)
                extra[f"w{w + 1:02}_rate"] = rates[-1]
                extra[f"w{w + 1:02}_mb"] = sizes[-1]
    finally:
        stop.set()
        if rotator:
            rotator.join()
    if upkeep:
        extra.update(counts)
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "SELECT rotations, truncations FROM mbus.queue_segment WHERE qname = 'soak'"
            ).fetchone()
        extra.update(rotations=row[0] if row else 0, truncations=row[1] if row else 0)
    extra.update(
        first_window_rate=rates[0],
        last_window_rate=rates[-1],
        last_over_first=rates[-1] / rates[0],
        # one window is a few seconds here, so a neighbour's burst moves a single window
        last3_over_first3=sum(rates[-3:]) / sum(rates[:3]),
        size_mb_max=max(sizes),
        size_mb_end=sizes[-1],
        heap_mb_end=heap,
        index_mb_end=idx,
    )
    return Measurement(per_window * WINDOWS, total_seconds, extra)


def candidate(dsn: str, size: int) -> Measurement:
    return _soak(dsn, size, "mbus.q_soak", WORK.post, WORK.claim, upkeep=True)


def baseline(dsn: str, size: int) -> Measurement:
    return _soak(dsn, size, "bench_raw_queue", WORK.raw_post, WORK.raw_claim, upkeep=False)
