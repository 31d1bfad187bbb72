"""A held xmin horizon must not make claims walk every consumed row (the queue spiral).

A REPEATABLE READ transaction that took its snapshot keeps every row deleted after it in the
heap and in the claim index. A claim's ordered index scan starts at the queue's oldest entry, so
it visits each consumed-but-unremovable entry before the first ready one: its time grows with
the number of messages consumed since the horizon was held, and at a steady load the backlog
and the table grow with it. The target is a claim time independent of that number: claims
start at the queue's floor (mbus.floor_guard), which the upkeep moves to the oldest live
message, so a claim walks at most the entries consumed since the last upkeep.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

CONSUMED = 20_000  # messages posted and consumed while the horizon is held
BATCH = 500


def _claim_buffers(conn: psycopg.Connection[Any], claims: int = 5) -> float:
    """The median number of shared buffers one claim of one message touches: the length of
    its walk through the claim index, counted by the server (no clock, so no load, in it)."""
    touched: list[int] = []
    for _ in range(claims):
        row = conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT id FROM mbus.consume_hz_by_default()"
        ).fetchone()
        assert row is not None
        top = row[0][0]["Plan"]
        touched.append(int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"]))
    return float(statistics.median(touched))


@pytest.fixture
def held(db_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """A session holding the database's xmin horizon (REPEATABLE READ, snapshot taken)."""
    with psycopg.connect(db_dsn) as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        conn.execute("SELECT count(*) FROM pg_class")
        yield conn
        conn.rollback()


def test_a_claims_walk_does_not_grow_with_rows_consumed_under_a_held_horizon(
    db_dsn: str, held: psycopg.Connection[Any]
) -> None:
    msgs = [Jsonb({"n": i}) for i in range(BATCH)]
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue('hz', 1)")
        conn.execute("SELECT count(*) FROM mbus.postn_hz(%s::jsonb[])", (msgs,))
        conn.execute("SELECT mbus.rotate_queue('hz')")
        fresh = _claim_buffers(conn)
        conn.execute("SELECT count(*) FROM mbus.consumen_hz_by_default(%s)", (BATCH,))
        for _ in range(CONSUMED // BATCH):
            conn.execute("SELECT count(*) FROM mbus.postn_hz(%s::jsonb[])", (msgs,))
            got = conn.execute("SELECT count(*) FROM mbus.consumen_hz_by_default(%s)", (BATCH,))
            assert got.fetchone() == (BATCH,)
        conn.execute("SELECT count(*) FROM mbus.postn_hz(%s::jsonb[])", (msgs,))
        # the upkeep the claims run once a second moves the floor to the oldest live message
        conn.execute("SELECT mbus.rotate_queue('hz')")
        after = _claim_buffers(conn)
    # 20,000 dead entries ahead: a claim today touches every index page over them
    assert after < 2 * fresh + 10, (fresh, after)
