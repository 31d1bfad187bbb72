"""A runaway plain ``def`` handler in the process pool cannot hold its slot past its time
limit: its child is killed (SIGKILL when it ignores SIGTERM) and the next message runs."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator

import psycopg
import pytest

from pgmbus.handlers import App
from pgmbus.queues import Bus
from pgmbus.workers import serve
from tests.workers import pool_app


@pytest.fixture
def pooldb(db_dsn: str) -> Iterator[str]:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE ran (queue text, iid text, attempt int, pid int,"
            " started float8, ended float8)"
        )
    with Bus(db_dsn) as bus:
        bus.create_queue("slow")
    yield db_dsn


def test_a_runaway_handler_does_not_hold_its_only_slot(pooldb: str) -> None:
    """``slow`` has one slot and a 0.5s limit; its first message sleeps 60s deaf to SIGTERM
    (two attempts, both killed), the second returns at once: it is handled, long before the
    runaway would have let go of the slot."""
    app = App()
    app.queue_handlers.extend(h for h in pool_app.app.queue_handlers if h.queue == "slow")
    with Bus(pooldb) as bus:
        runaway = bus.post("slow", {"dsn": pooldb, "sleep": 60})
        quick = bus.post("slow", {"dsn": pooldb, "sleep": 0})
        began = time.monotonic()

        def finished() -> bool:
            with psycopg.connect(pooldb) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM ran WHERE iid = %s AND ended IS NOT NULL", (quick,)
                ).fetchone()
            return row == (1,) and len(bus.dmq()) == 1

        async def main() -> None:
            stop = asyncio.Event()
            worker = asyncio.create_task(serve(app, dsn=pooldb, stop=stop, signals=False))
            try:
                while not await asyncio.to_thread(finished):
                    assert not worker.done() and time.monotonic() - began < 30
                    await asyncio.sleep(0.1)
            finally:
                stop.set()
                await worker

        asyncio.run(main())
        (dead,) = bus.dmq()
    assert dead.iid == runaway and dead.reason == "HandlerTimeout: handler exceeded 0.5s"
    with psycopg.connect(pooldb) as conn:
        pids = [r[0] for r in conn.execute("SELECT pid FROM ran WHERE iid = %s", (runaway,))]
    assert len(pids) == 2
    for pid in pids:  # killed, not left running
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
