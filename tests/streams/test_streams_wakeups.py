"""Wake-ups of waiting readers: publishing notifies only while a reader waits, none is lost."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import psycopg

from pgmbus import streams
from tests.streams.conftest import Connect


def _notes(listener: psycopg.Connection[Any], timeout: float = 0.3) -> list[str]:
    return [n.channel for n in listener.notifies(timeout=timeout, stop_after=1)]


def test_publishers_notify_only_while_a_reader_waits(connect: Connect) -> None:
    conn = connect(autocommit=True)
    listener = connect(autocommit=True)
    listener.execute("LISTEN mbus_events")  # listening alone is not waiting
    streams.publish(conn, "t", {})
    streams.publish_batch(conn, "t", [{}, {}])
    conn.execute("SELECT mbus.notify()")
    assert _notes(listener) == []
    listener.execute("SELECT mbus.await_events()")
    assert conn.execute("SELECT count(*) FROM mbus.stream_waiter").fetchone() == (1,)
    streams.publish(conn, "t", {})
    assert _notes(listener, 2) == ["mbus_events"]
    streams.publish_batch(conn, "t", [{}])
    assert _notes(listener, 2) == ["mbus_events"]
    conn.execute("SELECT mbus.notify()")
    assert _notes(listener, 2) == ["mbus_events"]
    with conn.transaction():  # one notification per transaction
        streams.publish(conn, "t", {})
        streams.publish_batch(conn, "t", [{}])
    assert [n.channel for n in listener.notifies(timeout=0.5)] == ["mbus_events"]
    listener.execute("SELECT mbus.await_events_done()")
    streams.publish(conn, "t", {})
    assert _notes(listener) == []


def test_a_dead_waiters_entry_is_removed_by_the_next_registration(connect: Connect) -> None:
    conn = connect(autocommit=True)
    gone = connect(autocommit=True)
    gone.execute("SELECT mbus.await_events()")
    pid = gone.info.backend_pid
    gone.close()
    deadline = time.monotonic() + 30
    while conn.execute("SELECT count(*) FROM pg_stat_get_activity(%s)", (pid,)).fetchone() != (0,):
        assert time.monotonic() < deadline, "the closed session's backend did not exit"
        time.sleep(0.02)
    conn.execute("SELECT mbus.await_events()")
    pids = {r[0] for r in conn.execute("SELECT pid FROM mbus.stream_waiter")}
    assert pids == {conn.info.backend_pid}


def test_a_writer_in_flight_at_registration_is_seen(connect: Connect) -> None:
    """A publisher that checked before the registration commits unnoticed: the reader knows."""
    reader = connect(autocommit=True)
    writer = connect()
    assert reader.execute("SELECT mbus._writers_in_flight()").fetchone() == (False,)
    streams.publish(writer, "t", {})  # checked: nobody waits; the transaction stays open
    reader.execute("SELECT mbus.await_events()")
    assert reader.execute("SELECT mbus._writers_in_flight()").fetchone() == (True,)
    writer.commit()  # no notification: it checked before the registration
    assert _notes(reader) == []
    assert reader.execute("SELECT mbus._writers_in_flight()").fetchone() == (False,)
    reading = connect()
    reading.execute("SELECT 1 FROM mbus.events LIMIT 1")  # readers do not count
    assert reader.execute("SELECT mbus._writers_in_flight()").fetchone() == (False,)


def test_worker_sees_an_event_whose_writer_missed_its_registration(
    connect: Connect, db_dsn: str
) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "w")
    writer = connect()
    streams.publish(writer, "t", {"early": True})  # before the worker waits, committed after
    got: list[Any] = []
    stop = threading.Event()
    worker = streams.StreamWorker(db_dsn, "w", lambda _c, e: got.append(e.payload))
    t = threading.Thread(target=worker.run, kwargs={"stop": stop.is_set, "idle_wait": 60.0})
    t.start()
    try:
        deadline = time.monotonic() + 30
        while conn.execute("SELECT count(*) FROM mbus.stream_waiter").fetchone() != (1,):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.2)  # the worker has looked and sleeps
        writer.commit()  # notifies nobody
        deadline = time.monotonic() + 20.0  # far below idle_wait
        while not got and time.monotonic() < deadline:
            time.sleep(0.02)
        assert got == [{"early": True}]
        # busy readers do not wait: after an event the registration goes until it idles again
        streams.publish(conn, "t", {"late": True})
        deadline = time.monotonic() + 20.0
        while len(got) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert got == [{"early": True}, {"late": True}]
    finally:
        stop.set()
        streams.publish(conn, "t", {})  # wake it so that it sees stop
        t.join(60)
    assert not t.is_alive()
    assert conn.execute("SELECT count(*) FROM mbus.stream_waiter").fetchone() == (0,)


def test_worker_unregisters_while_busy(connect: Connect, db_dsn: str) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "w", start="beginning")
    streams.publish_batch(conn, "t", [{"i": i} for i in range(30)])
    seen_waiters: list[int] = []

    def handler(c: psycopg.Connection[Any], _e: streams.Event) -> None:
        row = c.execute("SELECT count(*) FROM mbus.stream_waiter").fetchone()
        assert row is not None
        seen_waiters.append(row[0])

    worker = streams.StreamWorker(db_dsn, "w", handler, batch=10, maintain_every=timedelta(hours=1))
    stop = threading.Event()
    t = threading.Thread(target=worker.run, kwargs={"stop": stop.is_set, "idle_wait": 0.2})
    t.start()
    try:
        deadline = time.monotonic() + 30
        while len(seen_waiters) < 30 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        stop.set()
        t.join(10)
    assert seen_waiters == [0] * 30  # it had events to read: nobody waited
