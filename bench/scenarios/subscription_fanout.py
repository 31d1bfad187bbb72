"""Publish cost with 10,000 param subscriptions (candidate) vs with 1 (baseline).

Subscriptions share one condition (``s.params @> jsonb_build_object('topic', e.topic)``) and
differ in params. Publishing does not look at subscriptions (matching happens when a group
reads), so the goal is a ratio near 1 (the issue asks cost ratio <= 2, i.e. rate ratio >= 0.5).
The extra ``match_per_s`` is the other half of the cost: draining the same events through
``read_subscriptions`` (GIN-indexed matching) with 10,000 vs 1 subscription, the same events
matching on both sides (the 9,999 others never match).
"""

from __future__ import annotations

import time

import psycopg

from bench.harness import Measurement
from pgmbus import streams

name = "subscription_fanout"
unit = "events"
goal = "publish with 10,000 vs 1 param subscriptions: cost ratio <= 2 (rate ratio >= 0.5)"
default_size = 3_000
COND = "s.params @> jsonb_build_object('topic', e.topic)"


def setup(dsn: str, size: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        streams.create_group(conn, "fan")
        streams.subscribe(conn, "fan", COND, {"topic": "fan.0"})


def _subscriptions(conn: psycopg.Connection[tuple[object, ...]], many: bool) -> None:
    conn.execute('DELETE FROM mbus.subscriptions WHERE params <> \'{"topic": "fan.0"}\'')
    if many:
        conn.execute(
            # the owner's, like the one subscribe made: matched through the GIN index
            "INSERT INTO mbus.subscriptions (group_name, condition, params, full_language)"
            " SELECT 'fan', %s, jsonb_build_object('topic', 'other.' || i), true"
            " FROM generate_series(1, 9999) AS i",
            (COND,),
        )
    conn.execute("ANALYZE mbus.subscriptions")
    n = conn.execute("SELECT count(*) FROM mbus.subscriptions").fetchone()
    assert n == ((10_000 if many else 1),), n


def _run(dsn: str, size: int, *, many: bool) -> Measurement:
    with psycopg.connect(dsn, autocommit=True) as conn:
        _subscriptions(conn, many)
        streams.seek(conn, "fan", "now")
    with psycopg.connect(dsn) as conn:
        start = time.perf_counter()
        for i in range(size):
            streams.publish(conn, f"fan.{i % 100}", {"i": i})
        conn.commit()
        took = time.perf_counter() - start
        matched = 0
        start = time.perf_counter()
        while True:
            batch = streams.read_subscriptions(conn, "fan")
            if not batch:
                conn.commit()
                break
            assert batch.cursor is not None
            streams.commit(conn, "fan", batch.cursor)
            conn.commit()
            matched += len(batch)
        match_took = time.perf_counter() - start
    expected = (size + 99) // 100  # the same matches on both sides: fan.0 only
    assert matched == expected, (matched, expected)
    return Measurement(size, took, {"match_per_s": size / match_took, "matched": matched})


def candidate(dsn: str, size: int) -> Measurement:
    return _run(dsn, size, many=True)


def baseline(dsn: str, size: int) -> Measurement:
    return _run(dsn, size, many=False)
