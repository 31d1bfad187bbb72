"""The blocking and the asyncio stream worker are one loop: each behaviour holds for both."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from pgmbus import streams
from pgmbus.streams import AsyncStreamWorker, StreamWorker
from tests.streams.conftest import Connect

Kind = str
KINDS = ("blocking", "asyncio")

DUE = 1500  # more than one mbus.release_scheduled call moves (1000)


def _one_step(kind: Kind, dsn: str, group: str, got: list[int]) -> int:
    """One ``step`` of a fresh worker of ``kind`` whose handler records the event ids."""
    if kind == "blocking":

        def handle(_c: psycopg.Connection[Any], e: streams.Event) -> None:
            got.append(e.id)

        worker = StreamWorker(dsn, group, handle, batch=10 * DUE, maintain_every=None)
        with psycopg.connect(dsn) as conn:
            return worker.step(conn)

    async def ahandle(_c: psycopg.AsyncConnection[Any], e: streams.Event) -> None:
        got.append(e.id)

    aworker = AsyncStreamWorker(dsn, group, ahandle, batch=10 * DUE, maintain_every=None)

    async def main() -> int:
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            return await aworker.step(conn)

    return asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_a_step_releases_every_due_scheduled_event_before_reading(
    connect: Connect, db_dsn: str, kind: Kind
) -> None:
    """Future-dated events whose time has come are all in the first batch, not 1000 of them."""
    conn = connect(autocommit=True)
    streams.create_group(conn, "w")
    conn.execute(
        "SELECT mbus.publish('t', '{}'::jsonb, delayed_until => now() + interval '1 second')"
        " FROM generate_series(1, %s)",
        (DUE,),
    )
    deadline = time.monotonic() + 30
    while not _due(conn):
        assert time.monotonic() < deadline, "the scheduled events never came due"
        time.sleep(0.1)
    got: list[int] = []
    assert _one_step(kind, db_dsn, "w", got) == DUE
    assert len(set(got)) == DUE
    assert conn.execute("SELECT count(*) FROM mbus.stream_scheduled").fetchone() == (0,)


def _due(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        "SELECT count(*) FILTER (WHERE delayed_until <= now()) = count(*)"
        " FROM mbus.stream_scheduled"
    ).fetchone()
    return bool(row and row[0])


def _run_in_background(
    kind: Kind, dsn: str, group: str, handle: Callable[[streams.Event], None], idle_wait: float
) -> Callable[[], None]:
    """Start a worker of ``kind`` in a thread; return the function that stops and joins it."""
    stop = threading.Event()
    worker = StreamWorker(dsn, group, lambda _c, e: handle(e), maintain_every=None)

    async def ahandle(_c: psycopg.AsyncConnection[Any], e: streams.Event) -> None:
        handle(e)

    aworker = AsyncStreamWorker(dsn, group, ahandle, maintain_every=None)

    def target() -> None:
        if kind == "blocking":
            worker.run(stop=stop.is_set, idle_wait=idle_wait)
        else:
            asyncio.run(aworker.run(stop=stop.is_set, idle_wait=idle_wait))

    t = threading.Thread(target=target)
    t.start()

    def stop_and_join() -> None:
        stop.set()
        t.join(2 * idle_wait + 30)
        assert not t.is_alive()

    return stop_and_join


@pytest.mark.parametrize("kind", KINDS)
def test_an_event_whose_writer_missed_the_registration_is_read_soon(
    connect: Connect, db_dsn: str, kind: Kind
) -> None:
    """A publisher that checked for waiters before the worker registered notifies nobody; the
    worker sees such a writer in flight and polls instead of sleeping its idle wait."""
    conn = connect(autocommit=True)
    streams.create_group(conn, "w")
    writer = connect()
    streams.publish(writer, "t", {"early": True})  # before the worker waits, committed after
    got: list[Any] = []
    stop_and_join = _run_in_background(kind, db_dsn, "w", lambda e: got.append(e.payload), 2.0)
    try:
        deadline = time.monotonic() + 30
        while conn.execute("SELECT count(*) FROM mbus.stream_waiter").fetchone() != (1,):
            assert time.monotonic() < deadline, "the worker never waited"
            time.sleep(0.02)
        # the idle wait is 2 s, then stop() ends the run: a worker that misses the in-flight
        # writer reads the event only after its idle wait; with the poll it reads it at once
        time.sleep(0.2)
        writer.commit()  # notifies nobody
        started = time.monotonic()
        while not got and time.monotonic() < started + 30:
            time.sleep(0.01)
        assert got == [{"early": True}]
        assert time.monotonic() - started < 1.5, "read after the idle wait, not by the poll"
    finally:
        stop_and_join()
    assert conn.execute("SELECT count(*) FROM mbus.stream_waiter").fetchone() == (0,)


@pytest.mark.parametrize("kind", KINDS)
def test_the_worker_session_commits_asynchronously(
    connect: Connect, db_dsn: str, kind: Kind
) -> None:
    """``async_commit`` (the default) holds for the asyncio worker as for the blocking one."""
    conn = connect(autocommit=True)
    # the test cluster commits asynchronously everywhere: the worker's sessions must not
    conn.execute(
        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = on',"
        " current_database()); END $$"
    )
    streams.create_group(conn, "w")
    streams.publish(conn, "t", {})
    seen: list[str] = []
    if kind == "blocking":

        def handle(c: psycopg.Connection[Any], _e: streams.Event) -> None:
            row = c.execute("SHOW synchronous_commit").fetchone()
            assert row is not None
            seen.append(row[0])

        worker = StreamWorker(db_dsn, "w", handle, maintain_every=None)
        worker.drain()
    else:

        async def ahandle(c: psycopg.AsyncConnection[Any], _e: streams.Event) -> None:
            row = await (await c.execute("SHOW synchronous_commit")).fetchone()
            assert row is not None
            seen.append(row[0])

        asyncio.run(AsyncStreamWorker(db_dsn, "w", ahandle, maintain_every=None).drain())
    assert seen == ["off"]
