"""Micro-batch cuts (``mbus.spark_next_cursor``) and the reads of their ranges
(``mbus.spark_read``): every event once, and a cut inside a long transaction read from the cut."""

from __future__ import annotations

import itertools
import re
from typing import Any

import psycopg
from psycopg import sql

from tests.plans import explain_to_client
from tests.spark.conftest import cursor_now, publish, read_sql


def _next(conn: psycopg.Connection[Any], start: str, end: str, n: int) -> str:
    row = conn.execute(
        "SELECT mbus.spark_next_cursor(%s, %s, %s, NULL, NULL)", (start, end, n)
    ).fetchone()
    assert row is not None
    return str(row[0])


def _spark_read_ids(conn: psycopg.Connection[Any], start: str, end: str) -> list[int]:
    # literal cursors, as the source's read_range template runs it
    query = sql.SQL("SELECT id FROM mbus.spark_read({}, {}) ORDER BY id").format(
        sql.Literal(start), sql.Literal(end)
    )
    return [int(r[0]) for r in conn.execute(query)]


def _defined_ids(conn: psycopg.Connection[Any], start: str, end: str) -> list[int]:
    # the range by its definition, every event tested (no index bound, no fast path)
    rows = conn.execute(
        "SELECT e.id FROM mbus.events AS e"
        " WHERE mbus._consumed(e.txid, e.id, (mbus._parse_position(%(end)s)).pos)"
        " AND NOT mbus._consumed(e.txid, e.id, (mbus._parse_position(%(start)s)).pos)"
        " AND e.subscription_id IS NULL ORDER BY e.id",
        {"start": start, "end": end},
    )
    return [int(r[0]) for r in rows]


def _cuts(conn: psycopg.Connection[Any], start: str, end: str, n: int) -> list[str]:
    cuts = [start]
    while (nxt := _next(conn, cuts[-1], end, n)) != cuts[-1]:
        cuts.append(nxt)
    return cuts


def test_cuts_across_open_transactions_read_every_event_once(db_dsn: str) -> None:
    # Transactions still open when a cursor was taken (its in-progress list), a cut inside one
    # of them, events of one transaction on both sides of a cut: for every pair of cuts,
    # spark_read and read_between return exactly the range as defined (mbus._consumed).
    with psycopg.connect(db_dsn, autocommit=True) as conn, psycopg.connect(db_dsn) as held:
        publish(db_dsn, "t", 20)
        held.execute(
            "SELECT mbus.publish('t', jsonb_build_object('held', g)) "
            "FROM generate_series(1, 45) AS g"
        )
        start = cursor_now(db_dsn)  # the held transaction is in progress here
        publish(db_dsn, "t", 30, start=100)
        held.commit()
        publish(db_dsn, "t", 40, start=200)
        end = cursor_now(db_dsn)
        for first in ("1:1:", start):
            cuts = _cuts(conn, first, end, 7)
            assert len(cuts) > 10
            everything = _defined_ids(conn, first, end)
            pieces = [_spark_read_ids(conn, a, b) for a, b in itertools.pairwise(cuts)]
            assert all(0 < len(p) <= 7 for p in pieces), [len(p) for p in pieces]
            assert sorted(i for p in pieces for i in p) == everything
            for i, a in enumerate(cuts):
                for b in cuts[i + 1 :]:
                    expected = _defined_ids(conn, a, b)
                    assert _spark_read_ids(conn, a, b) == expected
                    assert [r[0] for r in read_sql(db_dsn, a, b)] == expected


def _buffers(plan: str) -> int:
    """The buffers the plan's top node touched (EXPLAIN or auto_explain with BUFFERS)."""
    found = re.search(r"Buffers: shared hit=(\d+)(?: read=(\d+))?", plan)
    assert found, plan
    return int(found.group(1)) + int(found.group(2) or 0)


def test_cuts_inside_a_long_transaction_start_at_the_cut(db_dsn: str) -> None:
    # A transaction of 30,000 events cut into micro-batches: each cut, and each read of a
    # batch (spark_read, read_between), starts at the previous cut (a few index pages), not
    # at the transaction's first event (a walk that grew with every batch: O(n^2) over the
    # transaction).
    publish(db_dsn, "t", 30_000)
    end = cursor_now(db_dsn)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("ANALYZE mbus.events")
        position = "1:1:"
        for _ in range(5):  # 25,000 events into the transaction
            position = _next(conn, position, end, 5_000)
        # once before measuring: a first call's buffers are mostly the catalog's
        conn.execute("SELECT count(*) FROM mbus.read_between(%s, %s)", (position, position))
        plans = explain_to_client(conn, analyze=True)
        cut = _next(conn, position, end, 10)
        rows = conn.execute(
            "SELECT count(*) FROM mbus.read_between(%s, %s)", (position, cut)
        ).fetchone()
        conn.execute("SET auto_explain.log_min_duration = -1")
        assert rows == (10,)
        # each whole call (its nested statements' buffers count in the top statement's)
        for call in ("SELECT mbus.spark_next_cursor", "SELECT count(*) FROM mbus.read_between"):
            found = [p for p in plans if call in p]
            assert len(found) == 1, plans
            assert _buffers(found[0]) < 40, plans

        read = sql.SQL(
            "EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM mbus.spark_read({}, {}, NULL, 0, 2)"
        ).format(sql.Literal(position), sql.Literal(cut))
        plan = "\n".join(str(r[0]) for r in conn.execute(read))
        assert _buffers(plan) < 40, plan
        assert len(_spark_read_ids(conn, position, cut)) == 10
        assert _spark_read_ids(conn, position, cut) == _defined_ids(conn, position, cut)


def test_cuts_count_directed_events_too(db_dsn: str) -> None:
    # Events sent directly to one subscription are read by the source that names it
    # (subscriptionId): the cut counts them like any other, so such a stream moves on.
    from pgmbus import streams

    with psycopg.connect(db_dsn, autocommit=True) as conn:
        streams.create_group(conn, "g")
        sub = streams.subscribe(conn, "g", "true")
        start = cursor_now(db_dsn)
        with conn.transaction():
            for n in range(3):
                streams.publish(conn, "t", {"n": n}, subscription_id=sub)
        end = cursor_now(db_dsn)
        cuts = _cuts(conn, start, end, 2)
        assert len(cuts) == 3  # 2 events, then 1
        directed = sql.SQL("SELECT count(*) FROM mbus.spark_read({}, {}, p_subscription => {})")
        counts = [
            conn.execute(
                directed.format(sql.Literal(a), sql.Literal(b), sql.Literal(sub))
            ).fetchone()
            for a, b in itertools.pairwise(cuts)
        ]
        assert counts == [(2,), (1,)]
