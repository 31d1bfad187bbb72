"""A worker's stop with a lease statement in flight, in-process on a real database.

The lease statement is held at the server by a lock another session takes on the queue's
table, so the stop comes while it runs, every time (at random it comes in a window of
microseconds: a lease that completed just before psycopg's cancel landed was dropped by a
stopping worker, its message leased to no one until the lease ran out).
"""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest

from pgmbus.queues import Bus, Message
from pgmbus.workers import App
from pgmbus.workers.runtime import serve


async def _lease_waiting_on_lock(dsn: str, seconds: float = 10) -> None:
    """Return once a session's claim waits for a lock: its lease statement, or the queue's
    storage upkeep that a claim on a fresh queue runs first (one claimer per handler)."""
    deadline = time.monotonic() + seconds
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            cur = await conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                " AND (query LIKE '%lease\\_jobs%' OR query LIKE '%upkeep\\_queue%')"
            )
            row = await cur.fetchone()
            if row is not None and row[0] > 0:
                return
            await asyncio.sleep(0.02)
    raise AssertionError("no lease statement waited for the lock")


def _app(dsn: str, handled: list[tuple[str, int]]) -> App:
    app = App(dsn)

    @app.handler("jobs", concurrency=2, lease=30.0, poll_interval=0.2)
    async def jobs(message: Message) -> None:
        handled.append((message.iid, message.attempts))

    return app


@pytest.mark.parametrize("waiting", [False, True], ids=["first-look", "after-listen"])
def test_a_stop_lets_the_lease_in_flight_finish_and_handles_what_it_claimed(
    db_dsn: str, waiting: bool
) -> None:
    """Stop while a lease statement runs: the statement is not cancelled, the message it
    claims is handled once (attempt 1) before the worker exits, and nothing stays leased.
    ``after-listen``: the slots are already in their wait loop when the lock comes."""
    handled: list[tuple[str, int]] = []
    with Bus(db_dsn) as bus:
        bus.create_queue("jobs")
        if not waiting:
            iid = bus.post("jobs", {"n": 1})

    async def scenario() -> None:
        stop = asyncio.Event()
        async with await psycopg.AsyncConnection.connect(db_dsn) as locker:
            run = asyncio.create_task(serve(_app(db_dsn, handled), stop=stop, signals=False))
            if waiting:
                await asyncio.sleep(0.5)  # the slots poll an empty queue
            await locker.execute("LOCK TABLE mbus.q_jobs IN ACCESS EXCLUSIVE MODE")
            await _lease_waiting_on_lock(db_dsn)
            stop.set()
            await asyncio.sleep(0.5)  # time for a cancel to land, had one been sent
            assert not run.done(), "the worker stopped with a lease statement cut short"
            if waiting:  # posted now: the blocked lease (a new snapshot per statement) sees it
                async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as poster:
                    await locker.rollback()
                    await poster.execute("SELECT mbus.post_jobs(%s::jsonb)", ('{"n": 1}',))
            else:
                await locker.rollback()
        report = await asyncio.wait_for(run, 20)
        (stats,) = report.queues.values()
        assert stats.given_back == 0 and stats.lost == 0

    asyncio.run(scenario())
    with Bus(db_dsn) as bus:
        (stats,) = bus.stats("jobs")
        if waiting:
            # claimed by the blocked lease and handled, or left for the next worker untouched
            left = bus.lease("jobs", lease=5)
            assert len(handled) + len(left) == 1
            assert [a for _, a in handled] + [m.attempts for m in left] == [1]
        else:
            assert handled == [(iid, 1)]
            assert stats.depth == 0 and stats.leased == 0


def test_an_abort_cuts_a_stuck_lease_short_and_loses_nothing(db_dsn: str) -> None:
    """A lease statement stuck behind a lock for longer than the grace period: at abort it
    is cancelled, the worker exits, and the message is there, untouched, for the next one."""
    handled: list[tuple[str, int]] = []
    with Bus(db_dsn) as bus:
        bus.create_queue("jobs")
        iid = bus.post("jobs", {"n": 1})

    async def scenario() -> float:
        stop = asyncio.Event()
        async with await psycopg.AsyncConnection.connect(db_dsn) as locker:
            run = asyncio.create_task(
                serve(_app(db_dsn, handled), stop=stop, grace=0.5, signals=False)
            )
            await locker.execute("LOCK TABLE mbus.q_jobs IN ACCESS EXCLUSIVE MODE")
            await _lease_waiting_on_lock(db_dsn)
            started = time.monotonic()
            stop.set()
            await asyncio.wait_for(run, 20)  # the lock is still held
            took = time.monotonic() - started
            await locker.rollback()
        return took

    took = asyncio.run(scenario())
    assert took < 10, took  # the grace period and a cancel, not the lock
    assert handled == []
    with Bus(db_dsn) as bus:
        (again,) = bus.lease("jobs", lease=5)
    assert again.iid == iid and again.attempts == 1
