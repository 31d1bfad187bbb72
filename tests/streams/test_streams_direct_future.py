"""PGMB seed rows: events sent directly to one subscription, and future-dated events."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from pgmbus import streams
from pgmbus.errors import InvalidArgument, NotFound, translating
from tests.streams.conftest import Connect, drain

BY_ROOM = "s.params @> jsonb_build_object('room', e.payload->'room')"


def _read_subs(conn: psycopg.Connection[Any], group: str) -> list[streams.Event]:
    seen: list[streams.Event] = []
    while True:
        with conn.transaction():
            batch = streams.read_subscriptions(conn, group)
            if not batch:
                return seen
            assert batch.cursor is not None
            streams.commit(conn, group, batch.cursor)
        seen.extend(batch.events)


def _scalar(conn: psycopg.Connection[Any], query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def _count(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(
        "SELECT count(*) FROM mbus.events"
        if table == "events"
        else "SELECT count(*) FROM mbus.stream_scheduled"
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_an_event_sent_to_one_subscription_reaches_only_its_readers(connect: Connect) -> None:
    # seed 003: "`subscription_id`: if an event has to be directly sent to a single
    # subscription, this column is set to that subscription's ID. This is useful for direct
    # messaging scenarios."
    conn = connect()
    for g in ("chat", "other_subs", "plain"):
        streams.create_group(conn, g, start="now")
    alice = streams.subscribe(conn, "chat", BY_ROOM, {"room": "a"})
    bob = streams.subscribe(conn, "chat", BY_ROOM, {"room": "a", "user": "bob"})
    other = streams.subscribe(conn, "other_subs", BY_ROOM, {"room": "a"})
    conn.commit()
    before = streams.current_cursor(conn)
    conn.commit()
    first = streams.publish(conn, "chat", {"room": "a", "n": 1})
    # directed: matches bob's and other's conditions too, but is for alice alone
    direct = streams.publish(conn, "chat", {"room": "a", "n": 2}, subscription_id=alice)
    # directed even though its payload matches no condition at all
    whisper = streams.publish(conn, "dm", {"n": 3}, subscription_id=bob)
    last = streams.publish(conn, "chat", {"room": "a", "n": 4})
    conn.commit()

    got = {e.id: e.subscription_ids for e in _read_subs(conn, "chat")}
    assert list(got) == [first, direct, whisper, last]
    assert got[first] == (alice, bob) and got[last] == (alice, bob)
    assert got[direct] == (alice,)
    assert got[whisper] == (bob,)
    others = _read_subs(conn, "other_subs")
    assert [(e.id, e.subscription_ids) for e in others] == [(first, (other,)), (last, (other,))]
    assert [e.id for e in drain(conn, "plain")] == [first, last]
    # replays without a group never show directed events
    after = streams.current_cursor(conn)
    conn.commit()
    assert [e.id for e in streams.read_between(conn, before, after)] == [first, last]
    rows = conn.execute(
        "SELECT event_id, subscription_ids FROM mbus.match_subscriptions('chat', %s) "
        "ORDER BY event_id",
        ([first, direct, whisper],),
    ).fetchall()
    assert rows == [(first, [alice, bob]), (direct, [alice]), (whisper, [bob])]
    assert (
        conn.execute(
            "SELECT * FROM mbus.match_subscriptions('other_subs', %s)", ([direct, whisper],)
        ).fetchall()
        == []
    )


def test_the_plain_reader_of_the_owning_group_gets_its_directed_events(connect: Connect) -> None:
    conn = connect()
    streams.create_group(conn, "owner", start="now")
    sub = streams.subscribe(conn, "owner", "e.topic = 'x'")
    conn.commit()
    ids = streams.publish_batch(conn, "x", [{"i": i} for i in range(5)], subscription_id=sub)
    conn.commit()
    assert [e.id for e in drain(conn, "owner", max_events=2)] == ids


def test_a_bad_subscription_or_time_is_a_typed_error_and_publishes_nothing(
    connect: Connect,
) -> None:
    conn = connect()
    streams.create_group(conn, "g", start="now")
    conn.commit()
    events, scheduled = _count(conn, "events"), _count(conn, "scheduled")
    conn.commit()
    with pytest.raises(NotFound, match="subscription 424242 does not exist"):
        streams.publish(conn, "t", {}, subscription_id=424242)
    conn.rollback()
    with pytest.raises(NotFound):
        streams.publish_batch(conn, "t", [{}, {}], subscription_id=424242)
    conn.rollback()
    with pytest.raises(InvalidArgument, match=r"^subscription_id"):  # no id is negative
        streams.publish_batch(conn, "t", [{}, {}], subscription_id=-1)
    with pytest.raises(NotFound), translating():  # SQL callers get NotFound for it
        conn.execute("SELECT mbus.publish_batch('t', ARRAY['{}'::jsonb], subscription_id => -1)")
    conn.rollback()
    with pytest.raises(InvalidArgument, match="finite"), translating():
        conn.execute("SELECT mbus.publish('t', '{}', delayed_until => 'infinity')")
    conn.rollback()
    with pytest.raises(InvalidArgument, match="max_events"):
        streams.release_scheduled(conn, limit=0)
    conn.rollback()
    assert (_count(conn, "events"), _count(conn, "scheduled")) == (events, scheduled)
    assert drain(conn, "g") == []


def test_a_future_event_is_neither_skipped_nor_blocking(connect: Connect) -> None:
    # seed 003: "The `poll_for_events` function scans the `unread_events` table for new events
    # that are ready to be consumed (i.e. `id < create_event_id(NOW(), 0)`)" -- an event
    # published now for a later time is read from that time on, by every reader, once.
    conn = connect()
    for g in ("early", "late"):
        streams.create_group(conn, g, start="now")
    conn.commit()
    due = datetime.now(UTC) + timedelta(seconds=1.2)
    future = streams.publish(conn, "t", {"n": "future"}, key="k", delayed_until=due)
    conn.commit()
    now1 = streams.publish(conn, "t", {"n": 1}, key="k")
    conn.commit()
    # the reader goes past the future event's publishing transaction: it is not blocked
    assert [e.id for e in drain(conn, "early")] == [now1]
    assert streams.release_scheduled(conn) == 0  # not yet
    conn.commit()
    assert drain(conn, "early") == []
    time.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds()) + 0.05)
    assert streams.release_scheduled(conn) == 1
    conn.commit()
    now2 = streams.publish(conn, "t", {"n": 2}, key="k")
    conn.commit()
    # ... and it is not skipped when its time comes, keeps its id, comes once, in log order
    got = drain(conn, "early")
    assert [e.id for e in got] == [future, now2]
    assert got[0].payload == {"n": "future"} and got[0].key == "k"
    assert got[0].published_at >= due
    assert [e.id for e in drain(conn, "late")] == [now1, future, now2]
    assert streams.release_scheduled(conn) == 0
    conn.commit()
    assert drain(conn, "early") == [] and drain(conn, "late") == []


def test_a_past_time_publishes_at_once_and_a_rollback_schedules_nothing(
    connect: Connect,
) -> None:
    conn = connect()
    streams.create_group(conn, "g", start="now")
    conn.commit()
    past = streams.publish(conn, "t", {}, delayed_until=datetime.now(UTC) - timedelta(hours=1))
    conn.commit()
    assert [e.id for e in drain(conn, "g")] == [past]
    streams.publish_batch(conn, "t", [{}, {}], delayed_until=datetime.now(UTC) + timedelta(0, 60))
    conn.rollback()
    assert _count(conn, "scheduled") == 0


def test_two_releasers_move_each_event_exactly_once(connect: Connect) -> None:
    conn, a, b = connect(), connect(), connect()
    streams.create_group(conn, "g", start="now")
    sub = streams.subscribe(conn, "g", "true")
    conn.commit()
    due = datetime.now(UTC) + timedelta(seconds=0.3)
    ids = streams.publish_batch(
        conn, "t", [{"i": i} for i in range(3)], delayed_until=due, subscription_id=sub
    )
    conn.commit()
    time.sleep(0.4)
    assert streams.release_scheduled(a, limit=2) == 2  # holds two rows, not committed
    assert streams.release_scheduled(b) == 1  # skips the held rows
    b.commit()
    a.rollback()  # the two go back ...
    assert streams.release_scheduled(b) == 2  # ... and move once
    b.commit()
    got = _read_subs(conn, "g")
    assert sorted(e.id for e in got) == ids
    assert all(e.subscription_ids == (sub,) for e in got)
    assert _count(conn, "scheduled") == 0


def test_the_stream_worker_releases_due_events_before_it_reads(
    connect: Connect, db_dsn: str
) -> None:
    conn = connect()
    streams.create_group(conn, "w", start="now")
    conn.commit()
    due = datetime.now(UTC) + timedelta(seconds=0.5)
    later = streams.publish(conn, "t", {"n": 1}, delayed_until=due)
    conn.commit()
    seen: list[int] = []
    worker = streams.StreamWorker(
        db_dsn, "w", lambda c, e: seen.append(e.id), release_every=timedelta(0)
    )
    work = connect()
    assert worker.step(work) == 0
    deadline = time.monotonic() + 30
    while not seen and time.monotonic() < deadline:
        worker.step(work)
        time.sleep(0.05)
    assert seen == [later]
    assert datetime.now(UTC) >= due


def test_retention_keeps_the_partition_a_future_event_will_be_logged_into(
    connect: Connect,
) -> None:
    conn = connect(autocommit=True)
    now = _scalar(conn, "SELECT now()")
    streams.create_group(conn, "g", start="now")
    later = streams.publish(conn, "t", {"n": 1}, delayed_until=now + timedelta(days=30))
    conn.execute("SELECT mbus.maintain(%s)", (now + timedelta(days=1, hours=1),))  # 1 closes
    report = _scalar(conn, "SELECT mbus.maintain(%s)", (now + timedelta(days=9),))
    assert report["dropped"] == []
    assert report["kept"] == [{"partition": "events_0000001", "groups": ["mbus.stream_scheduled"]}]
    conn.execute("UPDATE mbus.stream_scheduled SET delayed_until = now()")  # its time has come
    assert streams.release_scheduled(conn) == 1
    assert [e.id for e in drain(conn, "g")] == [later]
