"""Reading a consumer group with ``read_next`` + ``commit`` vs a raw keyset range scan.

Setup publishes ``size`` events in transactions of 1,000. The candidate drains a fresh group
from the beginning in batches of 1,000, each read and its commit in one transaction committed
the way ``StreamWorker`` does (``commit_transaction``: the cursor and the transaction's commit
in one round trip, on a session with ``synchronous_commit = off``, see docs/streams.md); the extra
``sync_commit_per_s`` is the same drain with a durable flush per batch. The baseline reads the
same rows with ``WHERE id > last ORDER BY id LIMIT 1000`` pages (read-only: it stores no
position).
"""

from __future__ import annotations

from typing import Any

import psycopg

from bench.harness import Measurement, timed
from pgmbus import streams

name = "stream_read"
unit = "events"
goal = "read_next + commit in batches of 1,000 vs a raw range scan of the same rows: >= 0.8x"
default_size = 50_000
BATCH = 1000


def setup(dsn: str, size: int) -> None:
    with psycopg.connect(dsn) as conn:
        for s in range(0, size, BATCH):
            n = min(BATCH, size - s)
            streams.publish_batch(
                conn,
                "bench",
                [{"n": s + i, "text": "x" * 40} for i in range(n)],
                keys=[str(i % 64) for i in range(n)],
            )
            conn.commit()
        conn.execute("ANALYZE mbus.events")
        conn.commit()


def _drain(dsn: str, size: int, *, sync: bool) -> Measurement:
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT mbus.drop_group(name) FROM mbus.stream_groups WHERE name = 'bench'")
        streams.create_group(conn, "bench", start="beginning")
        conn.commit()
        if not sync:
            conn.execute("SET synchronous_commit = off")  # as StreamWorker does
            conn.commit()
        got = 0

        def drain() -> None:
            nonlocal got
            while True:
                batch = streams.read_next(conn, "bench", limit=BATCH)
                if not batch:
                    conn.commit()
                    return
                assert batch.cursor is not None
                streams.commit_transaction(conn, "bench", batch.cursor)
                got += len(batch)

        m = timed(size, drain)
    assert got == size, (got, size)
    return m


def candidate(dsn: str, size: int) -> Measurement:
    m = _drain(dsn, size, sync=False)
    m.extra["sync_commit_per_s"] = _drain(dsn, size, sync=True).rate
    return m


def baseline(dsn: str, size: int) -> Measurement:
    with psycopg.connect(dsn) as conn:
        got = 0

        def scan() -> None:
            nonlocal got
            last = 0
            while True:
                rows: list[Any] = conn.execute(
                    "SELECT id, topic, key, payload, headers, published_at FROM mbus.events"
                    " WHERE id > %s ORDER BY id LIMIT %s",
                    (last, BATCH),
                ).fetchall()
                conn.commit()
                if not rows:
                    return
                last = rows[-1][0]
                got += len(rows)

        m = timed(size, scan)
    assert got == size, (got, size)
    return m
