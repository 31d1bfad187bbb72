"""One async stream handler: a task per slot on the async streams client, restarted on a lost DB."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import timedelta
from typing import Any

import psycopg

from pgmbus.data.streams import await_events
from pgmbus.handlers import StreamHandler
from pgmbus.streams import aclient
from pgmbus.streams.events import Event
from pgmbus.streams.worker import WorkerStats

AConn = psycopg.AsyncConnection[Any]


class AsyncStreamLoop:
    """Run an ``async def`` :class:`~pgmbus.handlers.StreamHandler` in the worker's event loop.

    The same contract as the sync ``StreamWorker``: ``await fn(conn, event)`` runs inside the
    batch's transaction on ``conn`` (an ``AsyncConnection``), each event in a savepoint, so its
    database writes commit with the group's cursor (exactly once); an event whose handler raises
    goes to the group's retries (then dead letters) and the batch goes on. Due future-dated
    events are released before reading. A batch in progress when ``stop`` is set finishes.
    """

    release_every = 0.2  # seconds between two mbus.release_scheduled calls of a slot

    def __init__(self, dsn: str, spec: StreamHandler) -> None:
        self.dsn = dsn
        self.spec = spec
        self.log = logging.getLogger(f"pgmbus.handler.{spec.name}")
        self.slots: tuple[int | None, ...] = spec.slots if spec.slots is not None else (None,)
        self.stats = WorkerStats()
        self._failing: set[int | None] = set()
        self._released: dict[int | None, float] = {}

    @property
    def healthy(self) -> bool:
        """False while a slot's loop is down (waiting to reconnect)."""
        return not self._failing

    async def run(self, stop: asyncio.Event) -> None:
        """Consume every slot until ``stop`` is set; a lost database is waited out."""
        await asyncio.gather(*(self._run_slot(slot, stop) for slot in self.slots))

    async def drain(self) -> None:
        """Handle every event due now (batches and retries), then return."""
        for slot in self.slots:
            async with await psycopg.AsyncConnection.connect(self.dsn) as conn:
                self._released.pop(slot, None)
                while await self.step(conn, slot):
                    pass

    async def _run_slot(self, slot: int | None, stop: asyncio.Event) -> None:
        failures = 0
        while not stop.is_set():
            try:
                async with (
                    await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as listen,
                    await psycopg.AsyncConnection.connect(self.dsn) as conn,
                ):
                    await await_events(listen)
                    while not stop.is_set():
                        seen = await self.step(conn, slot)
                        failures = 0
                        self._failing.discard(slot)
                        if not seen:
                            async for _ in listen.notifies(
                                timeout=self.spec.idle_wait, stop_after=1
                            ):
                                pass
            except psycopg.OperationalError as exc:
                failures += 1
                self._failing.add(slot)
                self.stats.reconnects += 1
                wait = min(5.0, 0.1 * 2**failures)
                self.log.warning(
                    "stream loop of group %s lost the database, retrying in %.1fs: %s",
                    self.spec.group,
                    wait,
                    exc,
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), wait)

    async def step(self, conn: AConn, slot: int | None) -> int:
        """Handle one batch and the due retries; return how many events were seen."""
        await self._maybe_release(conn, slot)
        group = self.spec.group
        read = aclient.read_subscriptions if self.spec.subscriptions else aclient.read_next
        try:
            batch = await read(conn, group, limit=self.spec.max_events, slot=slot)
            for event in batch.events:
                await self._handle(conn, event)
            if batch.cursor is not None:
                await aclient.commit_transaction(conn, group, batch.cursor)
            else:
                await conn.commit()
        except BaseException:
            await conn.rollback()
            raise
        if batch:
            self.stats.batches += 1
        async with conn.transaction():
            retries = await aclient.read_retries(
                conn, group, limit=self.spec.max_events, lease=timedelta(minutes=1)
            )
            for r in retries:
                event = Event(r.id, r.topic, r.key, r.payload, r.headers, r.published_at)
                if await self._handle(conn, event):
                    await aclient.ack_retry(conn, group, r.id)
        return len(batch) + len(retries)

    async def _maybe_release(self, conn: AConn, slot: int | None) -> None:
        now = time.monotonic()
        last = self._released.get(slot)
        if last is not None and now - last < self.release_every:
            return
        self._released[slot] = now
        async with conn.transaction():  # its own transaction: a new one of the log
            await aclient.release_scheduled(conn)

    async def _handle(self, conn: AConn, event: Event) -> bool:
        try:
            async with conn.transaction():  # a savepoint: a failing handler's writes are undone
                await self.spec.fn(conn, event)
        except Exception as exc:
            self.log.warning(
                "event %s of group %s failed",
                event.id,
                self.spec.group,
                exc_info=True,
                extra={"handler": self.spec.name, "group": self.spec.group, "event": event.id},
            )
            outcome = await aclient.retry_event(
                conn, self.spec.group, event.id, error=repr(exc)[:2000]
            )
            self.stats.retried += 1
            if outcome == "dead":
                self.stats.dead += 1
            return False
        self.stats.handled += 1
        return True
