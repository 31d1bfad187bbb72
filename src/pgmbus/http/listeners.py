"""Live listeners of ``pgmbus serve``: one reader fans subscriptions out to SSE clients."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, LiteralString

import psycopg
from psycopg_pool import AsyncConnectionPool

from pgmbus.data.rows import arows
from pgmbus.data.streams import LISTENERS
from pgmbus.errors import NotFound, PgmbusError

log = logging.getLogger("pgmbus.http.listeners")


def _q(name: str) -> LiteralString:
    return LISTENERS[name]


DEFAULT_MAX_LISTENER_BYTES = 256 * 1024
DEFAULT_MAX_LISTENERS_PER_KEY = 500


class TooManyListeners(PgmbusError):
    """The API key has as many live listeners as it may (``max_listeners_per_key``)."""


@dataclass(eq=False)
class Listener:
    """One connected client of a subscription: a bounded queue of SSE frames to send.

    ``queued_bytes`` counts the frames in ``queue`` (ASCII: ``frame`` escapes the rest), so the
    hub can bound what a client that does not read makes the process hold.
    """

    subscription_id: int
    queue: asyncio.Queue[str | None]
    client_id: int | None = None
    overflowed: bool = False
    queued_bytes: int = 0
    started: bool = False  # its stream has begun (it ends in the stream's ``finally``)
    counted: bool = False  # it counts against its key's ``max_listeners_per_key``

    def take(self, text: str) -> None:
        """Account for a frame taken off the queue to be sent."""
        self.queued_bytes -= len(text)


@dataclass
class _Subscription:
    group: str
    touch_every: float
    listeners: set[Listener] = field(default_factory=set)
    touched: float = 0.0


def frame(row: dict[str, Any]) -> str:
    """An event as one SSE frame (``id`` = the event id, ``data`` = the event as JSON)."""
    published = row["published_at"]
    body = {
        "id": row["id"],
        "topic": row["topic"],
        "key": row["key"],
        "payload": row["payload"],
        "headers": row["headers"],
        "published_at": published.isoformat() if isinstance(published, datetime) else published,
        "subscription_id": row["subscription_id"],
    }
    return f"id: {row['id']}\ndata: {json.dumps(body, separators=(',', ':'))}\n\n"


class ListenerHub:
    """Every live listener of the process, served by one reader task.

    Listeners of the same subscription share it: identical subscriptions are one row
    (``mbus.subscribe``), and the hub reads each event once for all of them
    (``mbus.read_listeners``: no group lock, no cursor), so fire-and-forget listeners never
    hold back a group's reliable readers and are never held back by them. A listener whose
    queue is full (a client that does not read) is dropped, not waited for. While a
    subscription has listeners the hub touches it, so ``maintain()`` removes it only once it
    has had none for its ``expires_after``.

    Parameters
    ----------
    pool:
        The service's connection pool (each call is its own transaction).
    dsn:
        For the connection that LISTENs on ``mbus_events``.
    poll_s:
        Longest wait between two reads (future-dated events are released at least this often).
    max_events:
        Events read per query (longer ranges are read in pieces).
    queue_size:
        Frames a listener may have unsent before it is dropped (a burst of more events than
        this, committed between two reads, drops every listener of the subscription: they
        reconnect from the present).
    max_listener_bytes:
        Bytes of frames a listener may have unsent before it is dropped; a listener with
        nothing unsent always takes the next frame, however large.
    max_listeners_per_key:
        Live listeners one API key (client) may hold at once; one more is refused with
        ``TooManyListeners`` (429).
    """

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        dsn: str,
        *,
        poll_s: float = 1.0,
        max_events: int = 1000,
        queue_size: int = 10000,
        max_listener_bytes: int = DEFAULT_MAX_LISTENER_BYTES,
        max_listeners_per_key: int = DEFAULT_MAX_LISTENERS_PER_KEY,
    ) -> None:
        self.pool = pool
        self.dsn = dsn
        self.poll_s = poll_s
        self.max_events = max_events
        self.queue_size = queue_size
        self.max_listener_bytes = max_listener_bytes
        self.max_listeners_per_key = max_listeners_per_key
        self.dropped = 0  # listeners dropped because they fell behind
        self.refused = 0  # listeners refused over the per-key limit
        # open listener connections per API client: a dropped listener whose client does not
        # read keeps its connection (blocked in a send) and counts until it closes
        self._open: dict[int, int] = {}
        self.subscriptions: dict[int, _Subscription] = {}
        self.cursor: str | None = None
        self.reads = 0
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    @property
    def listener_count(self) -> int:
        """Listeners connected now."""
        return sum(len(s.listeners) for s in self.subscriptions.values())

    @property
    def queued_bytes(self) -> int:
        """Bytes of frames queued for every listener, not sent yet."""
        return sum(x.queued_bytes for s in self.subscriptions.values() for x in s.listeners)

    def stats(self) -> dict[str, int]:
        """The numbers ``/metrics`` shows; call it on the event loop (the hub is not locked)."""
        return {
            "listeners": self.listener_count,
            "connections": sum(self._open.values()),
            "queued_bytes": self.queued_bytes,
            "dropped": self.dropped,
            "refused": self.refused,
        }

    def release(self, listener: Listener) -> None:
        """The listener's connection is over: it no longer counts against its key."""
        if listener.counted and listener.client_id is not None:
            listener.counted = False
            left = self._open.get(listener.client_id, 0) - 1
            if left > 0:
                self._open[listener.client_id] = left
            else:
                self._open.pop(listener.client_id, None)

    async def _rows(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            return await arows(conn, _q(name), params)

    async def _value(self, name: str, params: dict[str, Any]) -> Any:
        rows = await self._rows(name, params)
        return next(iter(rows[0].values())) if rows else None

    async def subscription(self, subscription_id: int) -> dict[str, Any]:
        """The subscription's row (``NotFound`` when it does not exist)."""
        rows = await self._rows("subscription", {"id": subscription_id})
        if not rows:
            raise NotFound(f"subscription {subscription_id} does not exist (expired?)")
        return rows[0]

    async def subscribe(
        self, group: str, condition: str, params: dict[str, Any], expires_after: timedelta | None
    ) -> int:
        """The id of the group's shared subscription (``mbus.subscribe``)."""
        from psycopg.types.json import Jsonb

        value = await self._value(
            "subscribe",
            {
                "group": group,
                "condition": condition,
                "params": Jsonb(params),
                "expires_after": expires_after,
            },
        )
        return int(value)

    async def add(self, subscription_id: int, client_id: int | None = None) -> Listener:
        """Connect a listener to an existing subscription (``NotFound`` otherwise).

        ``client_id`` is the caller's API client: one that has ``max_listeners_per_key``
        listeners already gets ``TooManyListeners``.
        """
        row = await self.subscription(subscription_id)
        expires: timedelta | None = row["expires_after"]
        touch_every = 10.0 if expires is None else max(0.05, expires.total_seconds() / 3)
        start = str(await self._value("current_cursor", {}))
        # from here on no await: the reader task cannot end between the check and the start,
        # and no other listener of the client can slip past the limit
        if client_id is not None and self._open.get(client_id, 0) >= self.max_listeners_per_key:
            self.refused += 1
            raise TooManyListeners(
                f"this API key has {self.max_listeners_per_key} live listeners already "
                "(max_listeners_per_key); close one first"
            )
        listener = Listener(subscription_id, asyncio.Queue(self.queue_size), client_id)
        if client_id is not None:
            self._open[client_id] = self._open.get(client_id, 0) + 1
            listener.counted = True
        sub = self.subscriptions.setdefault(
            subscription_id, _Subscription(row["group_name"], touch_every)
        )
        sub.listeners.add(listener)
        if self._task is None or self._task.done():
            self.cursor = start  # every event committed after this cursor reaches the listener
            self._task = asyncio.create_task(self._run(), name="pgmbus-listeners")
        return listener

    def remove(self, listener: Listener) -> None:
        """Disconnect a listener (its subscription stays until it expires)."""
        sub = self.subscriptions.get(listener.subscription_id)
        if sub is None:
            return
        sub.listeners.discard(listener)
        if not sub.listeners:
            del self.subscriptions[listener.subscription_id]

    async def close(self) -> None:
        """Stop the reader and end every listener's stream."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for sub in list(self.subscriptions.values()):
            for listener in sub.listeners:
                self._end(listener)
        self.subscriptions.clear()

    def _end(self, listener: Listener) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            listener.queue.put_nowait(None)

    async def _run(self) -> None:
        failures = 0
        while self.subscriptions:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.dsn, autocommit=True
                ) as listen:
                    await listen.execute(_q("listen"))
                    while self.subscriptions:
                        await self.step()
                        failures = 0
                        async for _ in listen.notifies(timeout=self.poll_s, stop_after=1):
                            pass
            except asyncio.CancelledError:
                raise
            except Exception:
                failures += 1
                log.warning("live listeners: read failed, retrying", exc_info=True)
                await asyncio.sleep(min(5.0, 0.1 * 2**failures))

    async def step(self) -> int:
        """Release due future-dated events, read what is new, fan it out; return frames sent."""
        await self._value("release_scheduled", {})
        now = str(await self._value("current_cursor", {}))
        sent = 0
        while self.subscriptions and self.cursor is not None and self.cursor != now:
            # (spark_next_cursor: at most max_events per read, and the same cut Spark uses)
            upto = str(
                await self._value(
                    "next_cursor",
                    {"from_cursor": self.cursor, "to_cursor": now, "max_events": self.max_events},
                )
            )
            if upto == self.cursor:
                break
            rows = await self._rows(
                "read",
                {
                    "from_cursor": self.cursor,
                    "to_cursor": upto,
                    "subscriptions": list(self.subscriptions),
                },
            )
            self.reads += 1
            for row in rows:
                for sid in row["subscription_ids"]:
                    sub = self.subscriptions.get(sid)
                    if sub is not None:
                        sent += self._fan_out(sub, frame({**row, "subscription_id": sid}))
            self.cursor = upto
            await asyncio.sleep(0)  # let the streams send before the next piece
        if not self.subscriptions:
            self.cursor = now
        await self._touch()
        return sent

    def _fan_out(self, sub: _Subscription, text: str) -> int:
        sent = 0
        size = len(text)
        for listener in list(sub.listeners):
            held = listener.queued_bytes
            if held and held + size > self.max_listener_bytes:
                self._overflow(listener)
                continue
            try:
                listener.queue.put_nowait(text)
            except asyncio.QueueFull:
                self._overflow(listener)
                continue
            listener.queued_bytes += size
            sent += 1
        return sent

    def _overflow(self, listener: Listener) -> None:
        """Drop a listener that fell behind: it is not waited for, and what it had queued is
        freed now (its client may never read again); its stream then says ``overflow``."""
        listener.overflowed = True
        self.dropped += 1
        self.remove(listener)
        while not listener.queue.empty():
            listener.queue.get_nowait()
        listener.queued_bytes = 0
        listener.queue.put_nowait(None)  # wakes the stream, which sees ``overflowed``
        if not listener.started:
            self.release(listener)  # a stream that never began has no ``finally`` to run

    async def _touch(self) -> None:
        clock = time.monotonic()
        due = [sid for sid, s in self.subscriptions.items() if clock - s.touched >= s.touch_every]
        if not due:
            return
        alive = {int(r["id"]) for r in await self._rows("touch", {"ids": due})}
        for sid in due:
            sub = self.subscriptions.get(sid)
            if sub is None:
                continue
            sub.touched = clock
            if sid not in alive:  # removed (unsubscribed or expired): end its streams
                for listener in list(sub.listeners):
                    self._end(listener)
                    self.remove(listener)


async def stream(hub: ListenerHub, listener: Listener, keepalive_s: float) -> AsyncIterator[str]:
    """The SSE body of one listener: its frames, a comment every ``keepalive_s`` when idle."""
    listener.started = True
    try:
        yield f"retry: 1000\n: subscription {listener.subscription_id}\n\n"
        while True:
            try:
                text = await asyncio.wait_for(listener.queue.get(), keepalive_s)
            except TimeoutError:
                if listener.overflowed:
                    yield "event: overflow\ndata: {}\n\n"
                    return
                yield ": keep-alive\n\n"
                continue
            if text is None:
                yield (
                    "event: overflow\ndata: {}\n\n"
                    if listener.overflowed
                    else "event: end\ndata: {}\n\n"
                )
                return
            listener.take(text)
            yield text
            if listener.overflowed and listener.queue.empty():
                yield "event: overflow\ndata: {}\n\n"
                return
    finally:
        hub.remove(listener)
        hub.release(listener)
