"""Topic routes: a topic (or a key range of it) forwarded to another database's topic.

Exactly once, per-key order kept, seenby one database longer per hop, no loops with routes both
ways; hostile route declarations are refused with typed errors.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from pgmbus.errors import AlreadyExists, InvalidArgument, NotFound, translating
from pgmbus.exchange import Bridge

Conn = psycopg.Connection[Any]
EVENTS = "SELECT key, payload, headers FROM mbus.events WHERE topic = %s ORDER BY id"


def _name(conn: Conn) -> str:
    row = conn.execute("SELECT current_database()").fetchone()
    return str(row[0]) if row else ""


def _publish(conn: Conn, topic: str, origin: str, count: int, keys: int) -> None:
    conn.execute(
        "SELECT mbus.publish(%s, jsonb_build_object('origin', %s::text, 'n', n), "
        "'k' || (n %% %s)) FROM generate_series(1, %s) AS n",
        (topic, origin, keys, count),
    )


def test_topic_routes_both_ways_move_each_event_once_in_key_order(
    make_db: Callable[..., str],
) -> None:
    a_dsn, b_dsn = make_db(), make_db()
    with psycopg.connect(a_dsn, autocommit=True) as a, psycopg.connect(b_dsn, autocommit=True) as b:
        a_db, b_db = _name(a), _name(b)
        for conn, peer in ((a, b_dsn), (b, a_dsn)):
            conn.execute("SELECT mbus.create_link('peer', %s)", (peer,))
            conn.execute("SELECT mbus.create_topic_route('ev_out', 'peer', 'ev', 'ev')")
        _publish(a, "ev", "a", 150, 7)
        _publish(b, "ev", "b", 90, 5)
        _publish(a, "other", "a", 10, 2)  # another topic: not forwarded
        movers = [Bridge(a_dsn, batch=20), Bridge(b_dsn, batch=20)]
        try:
            for _ in range(3):  # back and forth: the copies sent back are refused
                for mover in movers:
                    mover.drain()
        finally:
            for mover in movers:
                mover.close()
        assert (movers[0].stats.accepted, movers[1].stats.accepted) == (150, 90)
        assert (movers[0].stats.looped, movers[1].stats.looped) == (90, 150)
        assert movers[0].stats.duplicate == movers[1].stats.duplicate == 0
        for conn, here, there, mine, theirs in (
            (a, a_db, b_db, "a", 90),
            (b, b_db, a_db, "b", 150),
        ):
            rows = conn.execute(EVENTS, ("ev",)).fetchall()
            came = [(k, p, h) for k, p, h in rows if p["origin"] != mine]
            assert len(came) == theirs
            assert len({h["eid"] for _, _, h in came}) == theirs  # each once
            assert all(h["seenby"] == [there, here] and h["source_db"] == there for *_, h in came)
            by_key: dict[str, list[int]] = {}
            for key, payload, _ in came:
                by_key.setdefault(key, []).append(payload["n"])
            assert all(ns == sorted(ns) for ns in by_key.values())  # per-key order
        assert b.execute("SELECT count(*) FROM mbus.events WHERE topic = 'other'").fetchone() == (
            0,
        )


def test_a_key_range_forwards_only_its_keys_and_a_batch_sent_again_is_skipped(
    make_db: Callable[..., str],
) -> None:
    a_dsn, b_dsn = make_db(), make_db()
    with psycopg.connect(a_dsn, autocommit=True) as a, psycopg.connect(b_dsn, autocommit=True) as b:
        a.execute("SELECT mbus.create_link('peer', %s)", (b_dsn,))
        a.execute("SELECT mbus.create_topic_route('low', 'peer', 'ev', 'ev_low', 'k0', 'k3')")
        _publish(a, "ev", "a", 100, 10)
        a.execute("SELECT mbus.publish('ev', '{\"nokey\": true}')")  # no key: outside any range

        class CrashOnce(Bridge):
            crashed = False

            def _between_commits(self) -> None:
                if not self.crashed:
                    self.crashed = True
                    raise KeyboardInterrupt  # after the destination's commit

        mover = CrashOnce(a_dsn, batch=15)
        with pytest.raises(KeyboardInterrupt):
            mover.drain()
        mover.close()
        again = Bridge(a_dsn, batch=15)
        # an ordered group's batch is cut at the cluster's oldest running transaction: another
        # test's open transaction on the same server can hold it back for a moment
        deadline = time.monotonic() + 30
        while again.stats.duplicate == 0 and time.monotonic() < deadline:
            again.drain()
            time.sleep(0.05)
        again.close()
        assert again.stats.duplicate > 0  # the batch came again and was recognised
        rows = b.execute(EVENTS, ("ev_low",)).fetchall()
        assert sorted({k for k, _, _ in rows}) == ["k0", "k1", "k2"]
        assert len(rows) == 30 and len({h["eid"] for *_, h in rows}) == 30
        assert [p["n"] for k, p, _ in rows if k == "k1"] == list(range(1, 101, 10))


def test_bad_topic_routes_are_refused_and_change_nothing(make_db: Callable[..., str]) -> None:
    a_dsn, b_dsn = make_db(), make_db()
    with psycopg.connect(a_dsn, autocommit=True) as a:
        a.execute("SELECT mbus.create_link('peer', %s)", (b_dsn,))
        cases: list[tuple[type[Exception], tuple[Any, ...]]] = [
            (NotFound, ("r1", "nolink", "ev", "ev", None, None)),
            (InvalidArgument, ("r1", "peer", "", "ev", None, None)),
            (InvalidArgument, ("r1", "peer", "ev", "ev", "k5", "k1")),
        ]
        for error, args in cases:
            with pytest.raises(error), translating():
                a.execute("SELECT mbus.create_topic_route(%s, %s, %s, %s, %s, %s)", args)
        a.execute("SELECT mbus.create_topic_route('r1', 'peer', 'ev', 'ev')")
        with pytest.raises(AlreadyExists), translating():
            a.execute("SELECT mbus.create_topic_route('r1', 'peer', 'ev', 'ev2')")
        rows = a.execute("SELECT name, dst_topic FROM mbus.exchange_topic_route").fetchall()
        assert rows == [("r1", "ev")]
        groups = a.execute("SELECT name FROM mbus.stream_groups ORDER BY name").fetchall()
        assert groups == [("xt_r1",)]
        a.execute("SELECT mbus.drop_topic_route('r1')")
        assert a.execute("SELECT count(*) FROM mbus.stream_groups").fetchone() == (0,)
