"""Streams fixes: retry backoff overflow, seek against a reader's commit, typed input errors."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

import pytest
from psycopg.types.json import Jsonb

from pgmbus import streams
from pgmbus.errors import InvalidArgument, InvalidPayload, translating
from tests.streams.conftest import Connect


def test_retry_backoff_never_overflows(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g")
    streams.configure_group(conn, "g", max_attempts=200)
    eid = streams.publish(conn, "t", {})
    row = conn.execute("SELECT now()").fetchone()
    assert row is not None
    now: datetime = row[0]
    for attempt in range(1, 120):
        got = conn.execute(
            "SELECT mbus.retry_event('g', %s, 'boom', NULL, %s)", (eid, now)
        ).fetchone()
        assert got == ("retry",), attempt
    next_at = conn.execute(
        "SELECT next_at FROM mbus.stream_retries WHERE event_id = %s", (eid,)
    ).fetchone()
    assert next_at == (now + timedelta(hours=1),)
    with pytest.raises(InvalidArgument), translating():
        conn.execute("SELECT mbus.retry_event('g', %s, 'x', interval '-1 day')", (eid,))


def test_a_commit_of_a_cursor_read_before_a_seek_does_not_undo_it(connect: Connect) -> None:
    reader = connect()
    admin = connect(autocommit=True)
    streams.create_group(admin, "g", start="beginning")
    ids = streams.publish_batch(admin, "t", [{"i": i} for i in range(3)])
    batch = streams.read_next(reader, "g")  # the reader's transaction stays open
    assert [e.id for e in batch.events] == ids and batch.cursor is not None
    seeker = connect(autocommit=True)
    done = threading.Event()
    errors: list[BaseException] = []

    def seek() -> None:
        try:
            streams.seek(seeker, "g", "beginning")
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            done.set()

    worker = threading.Thread(target=seek)
    worker.start()
    time.sleep(0.5)
    waited = not done.is_set()
    streams.commit(reader, "g", batch.cursor)
    reader.commit()
    worker.join(10)
    assert not errors
    # the seek came after the reader's commit: everything is read again
    with admin.transaction():
        again = streams.read_next(admin, "g")
    assert [e.id for e in again.events] == ids
    assert waited, "the seek must wait for the reader's transaction"


def test_bad_cursors_and_batches_raise_typed_errors(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g")
    cursor = streams.group_cursor(conn, "g")
    for bad in (f"99999999999@{cursor}", f"1@{cursor};x", "nonsense"):
        with pytest.raises(InvalidArgument):
            streams.commit(conn, "g", bad)
    before = conn.execute("SELECT count(*) FROM mbus.events").fetchone()
    with pytest.raises(InvalidPayload), translating():
        conn.execute(
            "SELECT mbus.publish_batch('t', %s, NULL, %s)",
            ([Jsonb({}), Jsonb({})], [Jsonb({"a": 1}), Jsonb([1])]),
        )
    with pytest.raises(InvalidPayload), translating():
        conn.execute("SELECT mbus.publish_batch('t', NULL)")
    assert conn.execute("SELECT count(*) FROM mbus.events").fetchone() == before
    # NULL header elements mean "no headers"
    ids = conn.execute(
        "SELECT mbus.publish_batch('t', %s, NULL, %s)",
        ([Jsonb({}), Jsonb({})], [None, Jsonb({"a": 1})]),
    ).fetchall()
    assert len(ids) == 2


def test_capture_of_a_partitioned_table_names_it_and_truncate_notifies(
    connect: Connect,
) -> None:
    conn = connect(autocommit=True)
    conn.execute("CREATE TABLE public.tp (id int PRIMARY KEY) PARTITION BY RANGE (id)")
    conn.execute("CREATE TABLE public.tp1 PARTITION OF public.tp FOR VALUES FROM (0) TO (100)")
    streams.create_group(conn, "g")
    streams.capture_table(conn, "public.tp")
    listener = connect(autocommit=True)
    listener.execute("SELECT mbus.await_events()")  # LISTEN, and publishers notify
    conn.execute("INSERT INTO public.tp VALUES (1)")
    assert [n.channel for n in listener.notifies(timeout=2, stop_after=1)] == ["mbus_events"]
    conn.execute("TRUNCATE public.tp")
    assert [n.channel for n in listener.notifies(timeout=2, stop_after=1)] == ["mbus_events"]
    with conn.transaction():
        batch = streams.read_next(conn, "g")
    assert [(e.payload["op"], e.payload["table"]) for e in batch.events] == [
        ("insert", "public.tp"),
        ("truncate", "public.tp"),
    ]
