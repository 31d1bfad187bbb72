"""Subscriptions (PGMB): conditions with params, sharing, index matching, expiry."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pgmbus import streams
from pgmbus.errors import InvalidSelector, NotFound
from tests.streams.conftest import Connect

BY_TOPIC = "s.params @> jsonb_build_object('topic', e.topic)"
BY_ROOM = "s.params @> jsonb_build_object('room', e.payload->'room')"


def test_subscriptions_match_and_are_shared(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "live")
    created = streams.subscribe(conn, "live", BY_TOPIC, {"topic": "user.created"})
    again = streams.subscribe(conn, "live", BY_TOPIC, {"topic": "user.created"})
    assert again == created  # identical (group, condition, params): one shared subscription
    room7 = streams.subscribe(conn, "live", BY_ROOM, {"room": 7})
    streams.subscribe(conn, "live", BY_ROOM, {"room": 8})
    a = streams.publish(conn, "user.created", {"room": 7})
    streams.publish(conn, "user.deleted", {"room": 9})  # matches nothing
    c = streams.publish(conn, "chat", {"room": 7})
    batch = streams.read_subscriptions(conn, "live")
    got = {e.id: e.subscription_ids for e in batch.events}
    assert got == {a: tuple(sorted((created, room7))), c: (room7,)}
    assert [e.id for e in batch.events] == [a, c]
    assert batch.cursor
    streams.commit(conn, "live", batch.cursor)
    # a batch in which nothing matches is acknowledged by the read itself
    streams.publish(conn, "other", {"room": 1})
    assert streams.read_subscriptions(conn, "live").events == []
    assert streams.read_next(conn, "live").events == []


def test_conditions_are_checked(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g")
    with pytest.raises(InvalidSelector):
        streams.subscribe(conn, "g", "e.nope = 1")
    with pytest.raises(InvalidSelector):
        streams.subscribe(conn, "g", "true; DROP TABLE mbus.events")
    with pytest.raises(InvalidSelector):
        streams.subscribe(conn, "g", "true -- comment")
    with pytest.raises(NotFound):
        streams.subscribe(conn, "nope", BY_TOPIC, {"topic": "t"})


def test_subscriptions_expire_after_inactivity(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "sse")
    temp = streams.subscribe(
        conn, "sse", BY_TOPIC, {"topic": "a"}, expires_after=timedelta(minutes=15)
    )
    kept = streams.subscribe(
        conn, "sse", BY_TOPIC, {"topic": "b"}, expires_after=timedelta(minutes=15)
    )
    forever = streams.subscribe(conn, "sse", BY_TOPIC, {"topic": "c"})
    conn.execute("SELECT mbus.touch_subscription(%s, now() + interval '10 minutes')", (kept,))
    report = conn.execute("SELECT mbus.maintain(now() + interval '20 minutes')").fetchone()
    assert report is not None and report[0]["expired_subscriptions"] == 1
    left = [r[0] for r in conn.execute("SELECT id FROM mbus.subscriptions ORDER BY id")]
    assert left == [kept, forever]
    with pytest.raises(NotFound):
        streams.touch_subscription(conn, temp)


def test_ten_thousand_param_subscriptions_match_through_the_index(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "many")
    one = streams.subscribe(conn, "many", BY_TOPIC, {"topic": "t42"})
    conn.execute(
        "INSERT INTO mbus.subscriptions (group_name, condition, params) "
        "SELECT 'many', %s, jsonb_build_object('topic', 'u' || i) "
        "FROM generate_series(1, 10000) AS i",
        (BY_TOPIC,),
    )
    conn.execute("ANALYZE mbus.subscriptions")
    ids = [streams.publish(conn, f"u{i}", {}) for i in (5, 9999)]
    t42 = streams.publish(conn, "t42", {})
    streams.publish(conn, "nobody", {})
    batch = streams.read_subscriptions(conn, "many")
    assert [e.id for e in batch.events] == [*ids, t42]
    assert batch.events[-1].subscription_ids == (one,)
    plan = "\n".join(
        r[0]
        for r in conn.execute(
            "EXPLAIN SELECT e.id, s.id FROM unnest(ARRAY(SELECT ROW(txid, id, topic, key, "
            "payload, headers, published_at)::mbus.stream_row FROM mbus.events)) AS e "
            "JOIN mbus.subscriptions AS s ON s.group_name = 'many' AND s.condition = %s "
            "AND (" + BY_TOPIC + ")",
            (BY_TOPIC,),
        )
    )
    assert "subscriptions_params" in plan
