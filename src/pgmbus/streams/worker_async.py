"""A consumer loop for one group (or slot) on asyncio: batches, per-event retries, wake-ups.

The one stream worker of pgmbus, written once for asyncio (``pgmbus.streams.worker_async``)
with its blocking twin generated from it (``pgmbus.streams.worker``); ``pgmbus worker`` runs
plain stream handlers on the blocking one and coroutine handlers on the asyncio one.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg

from pgmbus import tracing
from pgmbus.data.streams import STREAMS
from pgmbus.reconnect import Backoff, is_transient
from pgmbus.renamed import renamed_keywords
from pgmbus.streams import client_async as calls
from pgmbus.streams.events import Event
from pgmbus.streams.worker_parts import AsyncHandler, WorkerStats, apause

__all__ = ["IN_FLIGHT_POLL", "AsyncStreamWorker", "WorkerStats"]

log = logging.getLogger("pgmbus.streams")

Conn = psycopg.AsyncConnection[Any]
Stop = Callable[[], bool]


class AsyncStreamWorker:
    """Consume a group: each batch, its results and its commit in one transaction.

    ``await handler(conn, event)`` runs inside the batch's transaction on ``conn``: whatever
    it writes there commits together with the group's cursor, so each event's database effects
    happen exactly once. A handler that raises has its event handed to the retry path (within
    a savepoint, so its partial writes are undone) and the batch goes on; after the group's
    ``max_attempts`` the event is dead-lettered. Effects outside the database (HTTP calls) are
    at-least-once: a crash after them and before the commit repeats them.

    Parameters
    ----------
    dsn:
        Where the group lives.
    group, slot:
        The group (and slot, for a slotted group) to consume.
    handler:
        Called once per event, in the batch's transaction.
    batch:
        Events read per batch (``max_events`` is the deprecated spelling).
    subscriptions:
        Read with ``read_subscriptions`` (events carry ``subscription_ids``).
    maintain_every:
        Run ``mbus.maintain()`` this often (None: never).
    release_every:
        Before reading, move future-dated events whose time has come into the log
        (``mbus.release_scheduled``, its own short transaction, repeated until none is due) at
        most this often (None: never; then something else must call it).
    async_commit:
        Set ``synchronous_commit = off`` on the worker's session. Safe for exactly-once database
        effects: the cursor and the results commit atomically, so a server crash can only lose
        the last batches' results *and* cursor moves together, and those batches are read and
        handled again. Turn it off when the handler's writes must be durable at commit.
    logger:
        Where a failing handler is logged, with its traceback (default ``pgmbus.streams``).
    log_fields:
        Fields added to those records (``extra``), besides ``group`` and ``event``.
    """

    @renamed_keywords(max_events="batch")
    def __init__(
        self,
        dsn: str,
        group: str,
        handler: AsyncHandler,
        *,
        slot: int | None = None,
        batch: int = 1000,
        subscriptions: bool = False,
        maintain_every: timedelta | None = timedelta(minutes=1),
        retry_lease: timedelta = timedelta(minutes=1),
        async_commit: bool = True,
        release_every: timedelta | None = timedelta(milliseconds=200),
        logger: logging.Logger | None = None,
        log_fields: dict[str, Any] | None = None,
    ) -> None:
        self.dsn = dsn
        self.group = group
        self.handler = tracing.traced_event_handler(handler, group)  # docs/tracing.md
        self.slot = slot
        self.batch = batch
        self.subscriptions = subscriptions
        self.maintain_every = maintain_every
        self.retry_lease = retry_lease
        self.async_commit = async_commit
        self.stats = WorkerStats()
        self.release_every = release_every
        self.log = logger or log
        self.log_fields = dict(log_fields or {})
        self.failing = False  # from a lost database until a step succeeds again
        self._last_maintain: float | None = None
        self._last_release: float | None = None
        self._async_sessions: set[int] = set()

    async def _handle(self, conn: Conn, event: Event) -> bool:
        try:
            async with conn.transaction():  # a savepoint: a failing handler's writes are undone
                await self.handler(conn, event)
        except Exception as exc:
            outcome = await calls.retry_event(conn, self.group, event.id, error=repr(exc)[:2000])
            self.stats.retried += 1
            if outcome == "dead":
                self.stats.dead += 1
            self.log.warning(
                "event %s of group %s failed (%s)",
                event.id,
                self.group,
                outcome,
                exc_info=True,
                extra={**self.log_fields, "group": self.group, "event": event.id},
            )
            return False
        self.stats.handled += 1
        return True

    async def step(self, conn: Conn) -> int:
        """Handle one batch and the due retries; return how many events were seen."""
        if self.async_commit and conn.info.backend_pid not in self._async_sessions:
            await conn.execute(STREAMS["async_commit"])  # for the session
            await conn.commit()
            self._async_sessions.add(conn.info.backend_pid)
        await self._maybe_release(conn)
        read = calls.read_subscriptions if self.subscriptions else calls.read_next
        try:
            batch = await read(conn, self.group, limit=self.batch, slot=self.slot)
            for event in batch.events:
                await self._handle(conn, event)
            if batch.cursor is not None:
                await calls.commit_transaction(conn, self.group, batch.cursor)  # one round trip
            else:
                await conn.commit()
        except BaseException:
            await conn.rollback()
            raise
        if batch:
            self.stats.batches += 1
        async with conn.transaction():
            due_retries = await calls.read_retries(
                conn, self.group, limit=self.batch, lease=self.retry_lease
            )
            for r in due_retries:
                event = Event(r.id, r.topic, r.key, r.payload, r.headers, r.published_at)
                if await self._handle(conn, event):
                    await calls.ack_retry(conn, self.group, r.id)
        return len(batch) + len(due_retries)

    async def drain(self) -> None:
        """Handle every event due now (batches and retries), then return."""
        async with await psycopg.AsyncConnection.connect(self.dsn) as conn:
            self._last_release = None  # release what is due before the first read
            while await self.step(conn):
                pass

    async def _maybe_release(self, conn: Conn) -> None:
        if self.release_every is None:
            return
        now = time.monotonic()
        last = self._last_release
        if last is not None and now - last < self.release_every.total_seconds():
            return
        self._last_release = now
        async with conn.transaction():  # its own transaction: the events are a new one of the log
            # one call moves at most RELEASE_CHUNK: go on until the due ones are all in
            while await calls.release_scheduled(conn, limit=RELEASE_CHUNK) >= RELEASE_CHUNK:
                pass

    async def _maybe_maintain(self, conn: Conn) -> None:
        if self.maintain_every is None:
            return
        now = time.monotonic()
        last = self._last_maintain
        if last is not None and now - last < self.maintain_every.total_seconds():
            return
        self._last_maintain = now
        async with conn.transaction():
            report = await calls.maintain(conn)
        for part, why in report.get("errors", {}).items():
            self.log.warning("maintain: part %s failed (the others were done): %s", part, why)
        self.stats.maintained += 1

    async def run(
        self,
        *,
        stop: Stop = lambda: False,
        idle_wait: float = 1.0,
        backoff: Backoff | None = None,
    ) -> WorkerStats:
        """Loop until ``stop()`` says so; when idle, registers (``mbus.await_events``) and sleeps.

        A lost connection (server restart, network cut, terminated backend) or a statement or
        lock timeout is logged and waited out with ``backoff``; the worker then reconnects and
        goes on from the group's committed cursor, so a batch cut before its commit is read
        again (its results were rolled back with it). Any other error is logged and raised.
        ``stop()`` is looked at between batches and at least every ``idle_wait`` seconds.
        """
        backoff = backoff or Backoff()
        while not stop():
            try:
                await self._run_connected(stop, idle_wait, backoff)
            except Exception as exc:
                if not is_transient(exc):
                    self.log.exception("stream worker of group %s stops", self.group)
                    raise
                self.failing = True
                self.stats.reconnects += 1
                self.stats.errors.append(f"{type(exc).__name__}: {exc}")
                delay = backoff.next()
                self.log.warning(
                    "stream worker of group %s: database error, reconnecting in %.2fs: %s",
                    self.group,
                    delay,
                    exc,
                )
                await apause(delay, stop)
        return self.stats

    async def _run_connected(self, stop: Stop, idle_wait: float, backoff: Backoff) -> None:
        async with (
            await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as listen_conn,
            await psycopg.AsyncConnection.connect(self.dsn) as conn,
        ):
            waiter = _Waiter(listen_conn)
            try:
                while not stop():
                    await self._maybe_maintain(conn)
                    seen = await self.step(conn)
                    backoff.reset()
                    self.failing = False
                    if seen:
                        await waiter.done()  # busy again: publishers need not notify
                    elif not waiter.registered:
                        # register, then look once more before sleeping: an event committed
                        # before the registration is found by that look, a later one notifies
                        await waiter.register()
                    else:
                        await waiter.sleep(idle_wait)
            finally:
                await waiter.close()


class _Waiter:
    """A worker's registration as a waiting reader (mbus.await_events) on its LISTEN session.

    Publishers notify only while some reader is registered. A writer that checked before the
    registration committed and commits after the reader's next look notifies nobody: while
    such a writer may exist (``mbus._writers_in_flight``, asked after the registration and before
    each look) the worker sleeps ``IN_FLIGHT_POLL`` seconds instead of its idle wait.
    """

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.registered = False
        self.in_flight = False

    async def register(self) -> None:
        await self.conn.execute(STREAMS["await_events"])
        self.registered = True
        self.in_flight = await self._writers_in_flight()

    async def sleep(self, idle_wait: float) -> None:
        wait = min(idle_wait, IN_FLIGHT_POLL) if self.in_flight else idle_wait
        async for _ in self.conn.notifies(timeout=wait, stop_after=1):
            pass
        if self.in_flight:
            self.in_flight = await self._writers_in_flight()

    async def done(self) -> None:
        if self.registered:
            await self.conn.execute(STREAMS["await_events_done"])
            self.registered = False

    async def close(self) -> None:
        if self.registered and not self.conn.closed and not self.conn.broken:
            with contextlib.suppress(psycopg.Error):  # else the next registration removes it
                await self.done()

    async def _writers_in_flight(self) -> bool:
        row = await (await self.conn.execute(STREAMS["writers_in_flight"])).fetchone()
        return bool(row and row[0])


IN_FLIGHT_POLL = 0.05
"""Seconds a waiting worker sleeps while a writer of the log may have missed its registration."""

RELEASE_CHUNK = 1000
"""Future-dated events one ``mbus.release_scheduled`` call moves at most."""
