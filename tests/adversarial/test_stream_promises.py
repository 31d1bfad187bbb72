"""Streams publish promises: a bounded delayed_until, and an idempotent publish.

Every call does what it says or raises: a delayed_until beyond ``streams.max_delay`` is a typed
error naming the bound and the setting, and stores nothing (a waiting event keeps its
partition, so how long one can wait is bounded). A publish retried with its idempotency key
within ``streams.idempotency_window`` stores nothing and returns the first publish's ids, and
the caller can tell it was a retry; concurrent retries store once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from pgmbus import streams
from pgmbus.cli import app
from pgmbus.errors import InvalidArgument, InvalidState, translating
from pgmbus.streams import aclient
from tests.ops.conftest import ADMIN_SCOPES, Service, start, wait_until
from tests.streams.conftest import Connect, drain

FAR = datetime(9997, 1, 1, tzinfo=UTC)


@pytest.fixture
def connect(db_dsn: str) -> Iterator[Connect]:
    """Connections to the test's fresh database, closed after the test."""
    opened: list[psycopg.Connection[Any]] = []

    def factory(*, autocommit: bool = False) -> psycopg.Connection[Any]:
        opened.append(psycopg.connect(db_dsn, autocommit=autocommit))
        return opened[-1]

    yield factory
    for c in opened:
        c.close()


def _stored(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    row = conn.execute(
        "SELECT (SELECT count(*) FROM mbus.events WHERE topic = 't'),"
        " (SELECT count(*) FROM mbus.stream_scheduled)"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


# ---------------------------------------------------------------------------------------------
# delayed_until is bounded by streams.max_delay
# ---------------------------------------------------------------------------------------------


def test_a_far_future_delayed_until_is_refused_naming_the_bound(connect: Connect) -> None:
    conn = connect(autocommit=True)
    before = _stored(conn)
    for sql in (
        "SELECT mbus.publish('t', '{}', delayed_until => '9997-01-01')",
        "SELECT mbus.publish_batch('t', ARRAY['{}'::jsonb], delayed_until => '9997-01-01')",
        "SELECT mbus.publish('t', '{}', delayed_until => now() + interval '31 days')",
    ):
        with pytest.raises(InvalidArgument, match=r"streams\.max_delay \(30 days\)"), translating():
            conn.execute(sql)
    with pytest.raises(InvalidArgument, match=r"streams\.max_delay"):
        streams.publish(conn, "t", {}, delayed_until=FAR)
    with pytest.raises(InvalidArgument, match=r"streams\.max_delay"):
        streams.publish_batch(conn, "t", [{}, {}], delayed_until=FAR, subscription_id=None)
    assert _stored(conn) == before
    # within the bound it waits as before; the operator may move the bound
    streams.publish(conn, "t", {}, delayed_until=datetime.now(UTC) + timedelta(days=29))
    conn.execute("SELECT mbus.set_setting('streams.max_delay', '\"400 days\"')")
    streams.publish(conn, "t", {}, delayed_until=datetime.now(UTC) + timedelta(days=365))
    assert _stored(conn) == (before[0], before[1] + 2)


def test_the_async_client_refuses_a_far_future_delayed_until(db_dsn: str) -> None:
    async def run() -> None:
        async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as conn:
            with pytest.raises(InvalidArgument, match=r"streams\.max_delay"):
                await aclient.publish(conn, "t", {}, delayed_until=FAR)
            with pytest.raises(InvalidArgument, match=r"streams\.max_delay"):
                await aclient.publish_once(conn, "t", [{}], idempotency_key="k", delayed_until=FAR)
            # the refused publish left its key unused
            once = await aclient.publish_once(conn, "t", [{}], idempotency_key="k")
            assert not once.duplicate

    asyncio.run(run())


# ---------------------------------------------------------------------------------------------
# idempotent publish
# ---------------------------------------------------------------------------------------------


def test_a_retried_publish_is_stored_once_and_says_it_was_a_retry(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g", start="now")
    first = streams.publish_once(conn, "t", [{"n": 1}], idempotency_key="k1")
    again = streams.publish_once(conn, "t", [{"n": 1}], idempotency_key="k1")
    assert not first.duplicate and again.duplicate and again.ids == first.ids
    # publish / publish_batch take the key too and return the first ids
    assert streams.publish(conn, "t", {"n": 1}, idempotency_key="k1") == first.ids[0]
    sql_id = conn.execute("SELECT mbus.publish('t', '{\"n\": 1}', idempotency_key => 'k1')")
    assert sql_id.fetchone() == (first.ids[0],)
    batch = streams.publish_batch(conn, "t", [{"i": 0}, {"i": 1}], idempotency_key="b")
    assert streams.publish_batch(conn, "t", [{"i": 0}, {"i": 1}], idempotency_key="b") == batch
    rows = conn.execute(
        "SELECT id, duplicate FROM mbus.publish_once('t', 'b', ARRAY['{}'::jsonb, '{}'])"
    ).fetchall()
    assert rows == [(batch[0], True), (batch[1], True)]
    # the same key on another topic is another publish
    other = streams.publish_once(conn, "u", [{}], idempotency_key="k1")
    assert not other.duplicate
    assert [e.id for e in drain(conn, "g")] == [first.ids[0], *batch, *other.ids]


def test_a_retry_after_the_event_was_read_still_stores_nothing(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g", start="now")
    first = streams.publish_once(conn, "t", [{}], idempotency_key="k")
    assert [e.id for e in drain(conn, "g")] == first.ids
    assert streams.publish_once(conn, "t", [{}], idempotency_key="k").duplicate
    assert drain(conn, "g") == []


def test_bad_keys_and_mismatched_retries_are_refused_and_store_nothing(
    connect: Connect,
) -> None:
    conn = connect(autocommit=True)
    streams.publish_once(conn, "t", [{}, {}], idempotency_key="two")
    before = _stored(conn)
    for key in ("", "x" * 201):
        with pytest.raises(InvalidArgument, match="idempotency key"):
            streams.publish_once(conn, "t", [{}], idempotency_key=key)
    with pytest.raises(InvalidArgument, match="idempotency key"), translating():
        conn.execute("SELECT * FROM mbus.publish_once('t', NULL, ARRAY['{}'::jsonb])")
    for bad in ("nul\x00key", 5):
        with pytest.raises(InvalidArgument, match=r"^idempotency_key"):
            streams.publish_once(conn, "t", [{}], idempotency_key=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgument, match=r"^idempotency_key"):
            streams.publish(conn, "t", {}, idempotency_key=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="publishes no event"):
        streams.publish_once(conn, "t", [], idempotency_key="empty")
    with pytest.raises(InvalidState, match="published with 2 events, not 3"):
        streams.publish_once(conn, "t", [{}, {}, {}], idempotency_key="two")
    assert _stored(conn) == before
    # a publish refused for its content leaves the key unused
    with pytest.raises(InvalidArgument, match="topic"):
        streams.publish_once(conn, "", [{}], idempotency_key="fresh")
    assert conn.execute(
        "SELECT count(*) FROM mbus.stream_publish_keys WHERE idempotency_key = 'fresh'"
    ).fetchone() == (0,)


def test_a_rolled_back_publish_leaves_its_key_unused(connect: Connect) -> None:
    conn = connect()
    rolled = streams.publish_once(conn, "t", [{}], idempotency_key="k")
    conn.rollback()
    again = streams.publish_once(conn, "t", [{}], idempotency_key="k")
    conn.commit()
    assert not again.duplicate and again.ids != rolled.ids
    assert _stored(conn) == (1, 0)


@pytest.mark.parametrize("first_ends", ["commit", "rollback"])
def test_concurrent_publishes_of_one_key_store_once(connect: Connect, first_ends: str) -> None:
    a, b = connect(), connect()
    first = streams.publish_once(a, "t", [{"by": "a"}], idempotency_key="race")
    got: list[streams.Published] = []
    thread = threading.Thread(
        target=lambda: got.append(
            streams.publish_once(b, "t", [{"by": "b"}], idempotency_key="race")
        )
    )
    thread.start()
    # b waits on a's uncommitted key row
    watch = connect(autocommit=True)
    wait_until(
        lambda: (
            watch.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND datname = current_database()"
            ).fetchone()
            == (1,)
        )
    )
    assert not got
    getattr(a, first_ends)()
    thread.join(10)
    b.commit()
    assert len(got) == 1
    if first_ends == "commit":
        assert got[0].duplicate and got[0].ids == first.ids
    else:
        assert not got[0].duplicate and got[0].ids != first.ids
    payloads = watch.execute("SELECT payload FROM mbus.events WHERE topic = 't'").fetchall()
    assert payloads == ([({"by": "a"},)] if first_ends == "commit" else [({"by": "b"},)])


def test_keys_are_forgotten_after_the_window(connect: Connect) -> None:
    conn = connect(autocommit=True)
    conn.execute("SELECT mbus.set_setting('streams.idempotency_window', '\"1 hour\"')")
    first = streams.publish_once(conn, "t", [{}], idempotency_key="old")
    streams.publish_once(conn, "t", [{}], idempotency_key="young")
    # an hour on, the upkeep forgets the key (a publish of it would store again)
    conn.execute(
        "UPDATE mbus.stream_publish_keys SET published_at = now() - interval '2 hours'"
        " WHERE idempotency_key = 'old'"
    )
    report = conn.execute("SELECT mbus.maintain()").fetchone()
    assert report is not None
    assert report[0]["publish_keys_expired"] == 1 and report[0]["errors"] == {}
    later = streams.publish_once(conn, "t", [{}], idempotency_key="old")
    assert not later.duplicate and later.ids != first.ids
    # a row past the window that the upkeep has not removed yet is taken over, not obeyed
    conn.execute(
        "UPDATE mbus.stream_publish_keys SET published_at = now() - interval '2 hours'"
        " WHERE idempotency_key = 'young'"
    )
    assert not streams.publish_once(conn, "t", [{}], idempotency_key="young").duplicate
    assert _stored(conn) == (4, 0)


def test_a_retried_future_dated_publish_returns_the_waiting_id(connect: Connect) -> None:
    conn = connect(autocommit=True)
    due = datetime.now(UTC) + timedelta(hours=1)
    first = streams.publish(conn, "t", {}, delayed_until=due, idempotency_key="later")
    assert streams.publish(conn, "t", {}, delayed_until=due, idempotency_key="later") == first
    assert _stored(conn) == (0, 1)


def test_the_async_client_publishes_once(db_dsn: str) -> None:
    async def run() -> None:
        async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as conn:
            ids = await aclient.publish_batch(conn, "t", [{}, {}], idempotency_key="a")
            once = await aclient.publish_once(conn, "t", [{}, {}], idempotency_key="a")
            assert once.duplicate and once.ids == ids
            one = await aclient.publish(conn, "t", {}, idempotency_key="b")
            assert await aclient.publish(conn, "t", {}, idempotency_key="b") == one

    asyncio.run(run())
    with psycopg.connect(db_dsn) as conn:
        assert _stored(conn) == (3, 0)


# ---------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def http(db_dsn: str) -> Iterator[Service]:
    base, stop = start(db_dsn)
    svc = Service(db_dsn, base)
    svc.add_key("admin", ADMIN_SCOPES)
    try:
        yield svc
    finally:
        stop()


def test_http_publish_with_an_idempotency_key_is_stored_once(http: Service) -> None:
    with http.client() as c:
        one = {"topic": "t", "payload": {"n": 1}}
        first = c.post("/v1/streams/events", json=one, headers={"Idempotency-Key": "k-1"})
        assert first.status_code == 201 and first.json()["duplicate"] is False
        again = c.post("/v1/streams/events", json=one, headers={"Idempotency-Key": "k-1"})
        assert again.status_code == 200
        assert again.json() == {"ids": first.json()["ids"], "duplicate": True}
        batch = {"topic": "t", "events": [{"payload": 1}, {"payload": 2}]}
        b1 = c.post("/v1/streams/events/batch", json=batch, headers={"Idempotency-Key": "b"})
        b2 = c.post("/v1/streams/events/batch", json=batch, headers={"Idempotency-Key": "b"})
        assert (b1.status_code, b2.status_code) == (201, 200)
        assert b2.json() == {"ids": b1.json()["ids"], "duplicate": True}
        short = c.post(
            "/v1/streams/events/batch",
            json={"topic": "t", "events": [{"payload": 1}]},
            headers={"Idempotency-Key": "b"},
        )
        assert short.status_code == 409 and "published with 2 events" in short.json()["message"]
        for bad in ("x" * 201, "a b"):
            r = c.post("/v1/streams/events", json=one, headers={"Idempotency-Key": bad})
            assert r.status_code == 422, r.text
        far = c.post(
            "/v1/streams/events",
            json={**one, "delayed_until": "9997-01-01T00:00:00Z"},
        )
        assert far.status_code == 422 and "streams.max_delay" in far.json()["message"]
        plain = c.post("/v1/streams/events", json=one)
        assert plain.status_code == 201
    assert http.value("SELECT count(*) FROM mbus.events WHERE topic = 't'") == 4
    assert http.value("SELECT count(*) FROM mbus.stream_scheduled") == 0


def test_http_bodies_take_what_their_schema_says(http: Service) -> None:
    """What the OpenAPI schema refuses is refused before any SQL runs (invalid_request), and
    what it admits is taken: no boolean for a number, no number for a time."""
    http.sql("SELECT mbus.create_group('g')")
    http.sql("SELECT mbus.create_queue('q')")
    refused = [
        ("/v1/streams/groups/g/read", {"slot": False}),
        ("/v1/streams/groups/g/read", {"limit": "3"}),
        ("/v1/streams/events", {"topic": "t", "payload": 1, "delayed_until": 0}),
        ("/v1/streams/events", {"topic": "t", "payload": 1, "subscription_id": True}),
        ("/v1/streams/events", {"topic": "é" * 101, "payload": 1}),  # 202 bytes
        ("/v1/streams/groups/g/seek", {"start": "2023-02-30T00:00:00Z"}),
        ("/v1/streams/groups/g/seek", {"start": "0000-00-00-000000"}),
        ("/v1/queues/q/lease", {"wait_s": False}),
        ("/v1/queues", {"queue": "r", "roles_security": 0}),
    ]
    with http.client() as c:
        for path, body in refused:
            r = c.post(path, json=body)
            assert (r.status_code, r.json()["error"]) == (422, "invalid_request"), (path, r.text)
        assert c.post("/v1/streams/events", json={"topic": "a" * 200, "payload": 1}).is_success
        assert c.post("/v1/streams/events", json={"topic": "é" * 50, "payload": 1}).is_success
        for start in ("2023-02-28T23:59:59.5+05:00", "beginning", "1"):
            r = c.post("/v1/streams/groups/g/seek", json={"start": start})
            assert r.status_code == 200, (start, r.text)
    assert http.value("SELECT count(*) FROM mbus.events") == 2
    assert http.value("SELECT count(*) FROM mbus.queue WHERE qname = 'r'") == 0


def test_the_command_line_publishes_once_per_key(db_dsn: str) -> None:
    runner = CliRunner()
    args = ["streams", "publish", "t", "{}", "--idempotency-key", "k", "--dsn", db_dsn]
    first, again = runner.invoke(app, args), runner.invoke(app, args)
    assert (first.exit_code, again.exit_code) == (0, 0), first.output + again.output
    assert first.stdout == again.stdout and "nothing stored" in again.stderr
    with psycopg.connect(db_dsn) as conn:
        assert _stored(conn) == (1, 0)
