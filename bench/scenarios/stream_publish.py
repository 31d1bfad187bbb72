"""Publishing to the stream log vs raw INSERTs into an equivalent partitioned table.

Each side writes ``size`` events three ways in one run: single-row calls (one transaction),
batches of 1,000 from arrays, and ``COPY``. The candidate uses ``mbus.publish``,
``mbus.publish_batch`` and ``COPY mbus.events``; the baseline the same rows with plain
``INSERT``/``COPY`` into ``bench_events``, a partitioned table with the same columns, defaults
(sequence id, ``pg_current_xact_id()``) and indexes. Extras give each way's own rate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from bench.harness import Measurement
from pgmbus import streams

name = "stream_publish"
unit = "events"
goal = "single + batch + COPY publish vs raw INSERT into an equivalent partitioned table: >= 0.8x"
default_size = 10_000

_SETUP = [
    "CREATE SEQUENCE IF NOT EXISTS bench_event_seq",
    "CREATE TABLE IF NOT EXISTS bench_events ("
    " id bigint NOT NULL DEFAULT nextval('bench_event_seq'), topic text NOT NULL, key text,"
    " payload jsonb NOT NULL, headers jsonb,"
    " published_at timestamptz NOT NULL DEFAULT clock_timestamp(),"
    " txid xid8 NOT NULL DEFAULT pg_current_xact_id(),"
    " CHECK (topic <> '' AND octet_length(topic) <= 200),"
    " CHECK (headers IS NULL OR jsonb_typeof(headers) = 'object'),"
    " PRIMARY KEY (id)) PARTITION BY RANGE (id)",
    "CREATE INDEX IF NOT EXISTS bench_events_txid_id ON bench_events (txid, id)",
    "CREATE TABLE IF NOT EXISTS bench_events_1 PARTITION OF bench_events"
    " FOR VALUES FROM (0) TO (9223372036854775807)"
    " WITH (autovacuum_vacuum_insert_threshold = -1)",
]
BATCH = 1000


def setup(dsn: str, size: int) -> None:
    with psycopg.connect(dsn) as conn:
        for stmt in _SETUP:
            conn.execute(stmt)  # type: ignore[arg-type]


def _payloads(size: int) -> list[dict[str, Any]]:
    return [{"n": i, "text": f"event {i}", "tags": ["a", "b"]} for i in range(size)]


def _run(
    dsn: str,
    size: int,
    single: Callable[..., None],
    batch: Callable[..., None],
    copy: Callable[..., None],
) -> Measurement:
    payloads = _payloads(size)
    extra: dict[str, float] = {}
    total = 0.0
    with psycopg.connect(dsn) as conn:
        for label, func in (("single", single), ("batch", batch), ("copy", copy)):
            start = time.perf_counter()
            func(conn, payloads)
            conn.commit()
            took = time.perf_counter() - start
            extra[f"{label}_per_s"] = size / took
            total += took
    return Measurement(3 * size, total, extra)


def _c_single(conn: psycopg.Connection[Any], payloads: list[dict[str, Any]]) -> None:
    for i, p in enumerate(payloads):
        streams.publish(conn, "bench", p, key=str(i % 64))


def _c_batch(conn: psycopg.Connection[Any], payloads: list[dict[str, Any]]) -> None:
    for s in range(0, len(payloads), BATCH):
        chunk = payloads[s : s + BATCH]
        streams.publish_batch(conn, "bench", chunk, keys=[str(i % 64) for i in range(len(chunk))])


def _c_copy(conn: psycopg.Connection[Any], payloads: list[dict[str, Any]]) -> None:
    streams.publish_copy(conn, (("bench", str(i % 64), p, None) for i, p in enumerate(payloads)))


def _b_single(conn: psycopg.Connection[Any], payloads: list[dict[str, Any]]) -> None:
    for i, p in enumerate(payloads):
        conn.execute(
            "INSERT INTO bench_events (topic, key, payload, headers) VALUES (%s, %s, %s, %s)"
            " RETURNING id",
            ("bench", str(i % 64), Jsonb(p), None),
        ).fetchone()


def _b_batch(conn: psycopg.Connection[Any], payloads: list[dict[str, Any]]) -> None:
    for s in range(0, len(payloads), BATCH):
        chunk = payloads[s : s + BATCH]
        conn.execute(
            "INSERT INTO bench_events (topic, key, payload)"
            " SELECT 'bench', k, p FROM unnest(%s::jsonb[], %s::text[]) AS u (p, k)"
            " RETURNING id",
            ([Jsonb(p) for p in chunk], [str(i % 64) for i in range(len(chunk))]),
        ).fetchall()


def _b_copy(conn: psycopg.Connection[Any], payloads: list[dict[str, Any]]) -> None:
    with (
        conn.cursor() as cur,
        cur.copy("COPY bench_events (topic, key, payload, headers) FROM STDIN") as copy,
    ):
        for i, p in enumerate(payloads):
            copy.write_row(("bench", str(i % 64), Jsonb(p), None))


def candidate(dsn: str, size: int) -> Measurement:
    return _run(dsn, size, _c_single, _c_batch, _c_copy)


def baseline(dsn: str, size: int) -> Measurement:
    return _run(dsn, size, _b_single, _b_batch, _b_copy)
