"""Subscriptions that route events into a queue, exactly once.

Issue 16: "subscriptions that route events into a queue (docs/DESIGN.md promises both; neither
exists)".
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from pgmbus import streams
from pgmbus.errors import InvalidSelector, NotFound, PgmbusError
from pgmbus.streams.routes import RouteMover
from tests.streams.conftest import Connect

ROOM = "s.params @> jsonb_build_object('room', e.payload->'room')"


def _setup(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    conn.execute("SELECT mbus.create_queue('mail', 2)")
    conn.execute("SELECT mbus.create_queue('audit', 2)")
    streams.create_group(conn, "routes", start="now")
    mail = streams.subscribe_queue(conn, "routes", "mail", ROOM, {"room": "a"})
    audit = streams.subscribe_queue(conn, "routes", "audit", "e.topic = 'chat'")
    conn.commit()
    return mail, audit


def _drain_queue(conn: psycopg.Connection[Any], queue: str) -> list[tuple[Any, Any]]:
    rows = conn.execute(
        "SELECT data, properties FROM mbus.consumen(%s, 'default', 1000)", (queue,)
    ).fetchall()
    conn.commit()
    return [(r[0], r[1]) for r in rows]


def test_routed_events_reach_their_queues_once_in_order(connect: Connect) -> None:
    conn = connect()
    mail, audit = _setup(conn)
    assert streams.subscribe_queue(conn, "routes", "mail", ROOM, {"room": "a"}) == mail
    ids = [
        streams.publish(conn, "chat", {"room": "a", "n": 1}, key="k"),
        streams.publish(conn, "chat", {"room": "b", "n": 2}),
        streams.publish(conn, "dm", [1, 2], subscription_id=mail),  # directed, not an object
        streams.publish(conn, "chat", {"room": "a", "n": 3}, headers={"h": 1}),
    ]
    conn.commit()
    assert streams.move_routed(conn, "routes", limit=3) == 3
    conn.commit()
    assert streams.move_routed(conn, "routes") == 1
    conn.commit()
    assert streams.move_routed(conn, "routes") == 0
    conn.commit()
    got = _drain_queue(conn, "mail")
    assert [d for d, _ in got] == [{"room": "a", "n": 1}, {"value": [1, 2]}, {"room": "a", "n": 3}]
    assert [p["event_id"] for _, p in got] == [ids[0], ids[2], ids[3]]
    assert got[0][1]["topic"] == "chat" and got[0][1]["key"] == "k"
    assert got[0][1]["subscription_ids"] == [mail, audit]
    assert got[1][1]["subscription_ids"] == [mail]
    assert got[2][1]["headers"] == {"h": 1}
    assert [p["event_id"] for _, p in _drain_queue(conn, "audit")] == [ids[0], ids[1], ids[3]]
    assert _drain_queue(conn, "mail") == []


def test_a_rolled_back_or_killed_mover_posts_nothing_and_the_next_posts_once(
    connect: Connect,
) -> None:
    conn, admin = connect(), connect(autocommit=True)
    _setup(conn)
    ids = [streams.publish(conn, "chat", {"room": "a", "n": i}) for i in range(5)]
    conn.commit()
    assert streams.move_routed(conn, "routes") == 5
    conn.rollback()  # a failure after the posts: neither the posts nor the cursor stay
    mover = connect()
    assert streams.move_routed(mover, "routes") == 5
    pid = mover.info.backend_pid
    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))  # killed before its commit
    with pytest.raises(psycopg.OperationalError):
        mover.commit()
    assert _drain_queue(conn, "mail") == []
    assert RouteMover(admin.info.dsn, "routes").drain() == 5
    assert [p["event_id"] for _, p in _drain_queue(conn, "mail")] == ids
    assert [p["event_id"] for _, p in _drain_queue(conn, "audit")] == ids


def test_the_route_mover_releases_future_events_when_due(connect: Connect) -> None:
    conn = connect()
    mail, _ = _setup(conn)
    later = streams.publish(
        conn,
        "dm",
        {"n": 1},
        subscription_id=mail,
        delayed_until=datetime.now(UTC) + timedelta(0, 60),
    )
    conn.commit()
    mover = RouteMover(conn.info.dsn, "routes")
    assert mover.drain() == 0
    conn.execute("UPDATE mbus.stream_scheduled SET delayed_until = now() - interval '1 ms'")
    conn.commit()
    assert mover.drain() == 1
    assert [p["event_id"] for _, p in _drain_queue(conn, "mail")] == [later]


def test_careless_routes_get_typed_errors_and_change_nothing(connect: Connect) -> None:
    conn = connect()
    mail, audit = _setup(conn)
    with pytest.raises(NotFound, match="queue 'nope' does not exist"):
        streams.subscribe_queue(conn, "routes", "nope", "true")
    conn.rollback()
    with pytest.raises(NotFound):
        streams.subscribe_queue(conn, "no_group", "mail", "true")
    conn.rollback()
    with pytest.raises(InvalidSelector):
        streams.subscribe_queue(conn, "routes", "mail", "(SELECT true)")
    conn.rollback()
    with pytest.raises(PgmbusError):
        streams.subscribe_queue(conn, "routes", "mail; drop table x", "true")
    conn.rollback()
    count = conn.execute("SELECT count(*) FROM mbus.subscription_queues").fetchone()
    assert count == (2,)
    assert conn.execute("SELECT count(*) FROM mbus.subscriptions").fetchone() == (2,)
    # routes go with their queue or subscription
    assert streams.unsubscribe_queue(conn, audit, "audit") is True
    assert streams.unsubscribe_queue(conn, audit, "audit") is False
    conn.execute("SELECT mbus.drop_queue('mail')")
    conn.commit()
    assert conn.execute("SELECT count(*) FROM mbus.subscription_queues").fetchone() == (0,)
    streams.publish(conn, "chat", {"room": "a"})
    conn.commit()
    assert streams.move_routed(conn, "routes") == 1  # matched, routed nowhere: read, not posted
    conn.commit()
    assert mail
