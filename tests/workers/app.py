"""The app run by ``pgmbus worker tests.workers.app:bus`` in the worker tests (DSN: PGMBUS_DSN).

Every handler records what it finished in table ``handled`` (in its own connection), so the
tests see what ran, how often and at which attempt.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import psycopg

from pgmbus.handlers import App
from pgmbus.queues import Bus, Message
from pgmbus.streams import Event

bus = Bus(max_size=2)
RECORD = "INSERT INTO handled (handler, iid, attempt) VALUES (%s, %s, %s)"


class Permanent(Exception):
    """An error no retry can fix (bad input): straight to the dmq."""


def _record(handler: str, message: Message) -> None:
    with psycopg.connect(os.environ["PGMBUS_DSN"], autocommit=True) as conn:
        conn.execute(RECORD, (handler, message.iid, message.attempts))


async def _arecord(handler: str, message: Message) -> None:
    async with await psycopg.AsyncConnection.connect(
        os.environ["PGMBUS_DSN"], autocommit=True
    ) as conn:
        await conn.execute(RECORD, (handler, message.iid, message.attempts))


@bus.handler(
    "jobs",
    concurrency=3,
    max_attempts=3,
    backoff=0.05,
    jitter=0.0,
    no_retry_on=(Permanent,),
    lease=2.0,
    poll_interval=0.2,
)
def jobs(message: Message) -> None:
    """Sync: ``permanent`` is never retried, ``flaky`` always fails, ``sleep`` takes a while."""
    if message.data.get("permanent"):
        raise Permanent("bad input")
    if message.data.get("flaky"):
        raise ConnectionError("smtp down")
    time.sleep(float(message.data.get("sleep", 0)))
    _record("jobs", message)


@bus.handler(
    "mail", concurrency=2, max_attempts=2, backoff=0.05, jitter=0.0, timeout=0.5, poll_interval=0.2
)
async def mail(message: Message) -> None:
    """Async, limited to 0.5 s: a longer ``sleep`` is cancelled."""
    await asyncio.sleep(float(message.data.get("sleep", 0)))
    await _arecord("mail", message)


@bus.handler("report", max_attempts=1, timeout=0.5, poll_interval=0.2)
def report(message: Message) -> None:
    """Sync, limited to 0.5 s: its thread cannot be stopped, so it records after a timeout."""
    time.sleep(float(message.data.get("sleep", 0)))
    _record("report", message)


@bus.handler("long", lease=2.0, poll_interval=0.2)
async def long(message: Message) -> None:
    """Async without a limit (for the shutdown test)."""
    await asyncio.sleep(float(message.data.get("sleep", 0)))
    await _arecord("long", message)


@bus.stream_handler("audit", batch=10, idle_wait=0.2)
def audit(conn: psycopg.Connection[Any], event: Event) -> None:
    """In the batch's transaction: one row per event, exactly once."""
    conn.execute("INSERT INTO audited (event_id) VALUES (%s)", (event.id,))


broken = App()  # DSN from PGMBUS_DSN when it runs


@broken.handler("missing", poll_interval=0.2)
def nowhere(message: Message) -> None:
    """Declared on a queue that does not exist: the worker must fail, not spin."""


auditors = App()  # only the stream handler, for several processes on one group
auditors.stream_handler("audit", batch=7, idle_wait=0.2)(audit)


async def aaudit(conn: psycopg.AsyncConnection[Any], event: Event) -> None:
    """Async, in the batch's transaction: one row per event, exactly once; an event with
    ``{"fail": n}`` fails its first n attempts (retried by the group, written once after)."""
    await asyncio.sleep(0)
    if isinstance(event.payload, dict) and event.payload.get("fail"):
        cur = await conn.execute("SELECT nextval('aaudit_failures')")
        row = await cur.fetchone()
        if row is not None and row[0] <= event.payload["fail"]:
            raise RuntimeError(f"failure {row[0]}")
    await conn.execute("INSERT INTO audited (event_id) VALUES (%s)", (event.id,))


aauditors = App()  # the async stream handler only, for several processes on one group
aauditors.stream_handler("audit", idle_wait=0.2)(aaudit)
