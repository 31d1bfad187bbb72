"""The dispatcher: leases buckets, claims due callbacks, calls their URLs, records results.

One asyncio process runs these loops on four database connections:

* heartbeat: ``mbus.timer_heartbeat`` every ``bucket_lease_s / 3`` keeps its bucket leases and
  takes its fair share of buckets (a dead dispatcher's buckets are free once their lease ends);
* claim: every ``poll_interval_s`` (or at once while there is more), ``mbus.timer_claim`` takes
  callbacks of its buckets due within ``lookahead_s`` in (run_at, id) order, in batches of up
  to ``claim_batch``; they wait in a heap, ordered by run_at, and each is handed to the HTTP
  workers when its run_at has come (never before);
* workers: coroutines, each with its own HTTP connection (kept alive), call the URLs; at most
  ``concurrency`` calls are in flight, not counting calls stalled past ``stall_after_s``
  (those give their slot back, up to ``stalled_calls`` of them). They take due callbacks in
  turns over the clients and target hosts (:class:`~pgmbus.timers.lanes.Lanes`), at most
  ``client_concurrency`` calls of one client and ``host_concurrency`` to one host at a time,
  and the claims leave out a client once ``client_prefetch`` of its callbacks are held: a
  client whose endpoint hangs, or with a large backlog, never holds back another's, nor do
  hosts that hang together;
* record: finished deliveries are written in batches with ``mbus.timer_record``, one statement
  per batch, while the workers go on;
* changes: LISTEN on ``mbus_timer_changed``; a claim held in memory whose callback was updated,
  cancelled or deleted since is discarded before its call;
* scheduler and maintenance: schedules are materialized ahead of time, and the daily cleanup
  runs (one dispatcher of many does it).

A claim holds a callback until ``run_at + (timeout_s + slack) * (fast_retries + 1)``; a
dispatcher that dies before recording loses its claims when they expire and the callback is
delivered again (same ``webhook-id``, next attempt number).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import logging
import os
import socket
import ssl
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from pgmbus.errors import DatabaseError
from pgmbus.reconnect import Backoff, is_transient
from pgmbus.timers import http11, scheduler
from pgmbus.timers import store_async as store
from pgmbus.timers.delivery import MAX_RESPONSE_BYTES, Claimed, Delivery, crashed, deliver
from pgmbus.timers.lanes import Lanes
from pgmbus.timers.netguard import NetworkGuard

log = logging.getLogger("pgmbus.timers.dispatcher")
# what a statement can raise: a driver error (connection lost) or a typed server error
DB_ERRORS = (psycopg.Error, DatabaseError)


class _Link:
    """A database connection that is opened again after it breaks (server restart, kill)."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conn: psycopg.AsyncConnection[Any] | None = None

    async def get(self) -> psycopg.AsyncConnection[Any]:
        if self.conn is not None and (self.conn.closed or self.conn.broken):
            with contextlib.suppress(psycopg.Error):
                await self.conn.close()
            self.conn = None
        if self.conn is None:
            self.conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        return self.conn

    async def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(psycopg.Error):
                await self.conn.close()
            self.conn = None


@dataclass
class DispatcherConfig:
    """Settings of a dispatcher (the CLI options of ``pgmbus dispatcher``)."""

    concurrency: int = 64
    timeout_s: float = 10.0
    poll_interval_s: float = 0.1
    lookahead_s: float = 1.0
    rescan_interval_s: float = 0.5
    max_prefetch: int = 10_000
    bucket_lease_s: float = 10.0
    claim_slack_s: float = 5.0
    claim_batch: int = 2000
    record_interval_s: float = 0.05
    record_batch: int = 2000
    fast_retry_delay_s: float = 0.05
    schedules: bool = True
    schedule_interval_s: float = 1.0
    schedule_horizon_s: float = 300.0
    clean_ttl_days: int = 30
    clean_every_s: float = 86400.0
    # fairness bounds (0 = the default): calls in flight of one client (3/4 of concurrency)
    # and to one host:port (1/2), callbacks of one client held claimed (1/2 of max_prefetch)
    # and callbacks of one client due and waiting for a call (2 * concurrency): past it, once
    # half of max_prefetch is held, the client is left out of claims, so clients that hang
    # cannot fill max_prefetch together
    client_concurrency: int = 0
    host_concurrency: int = 0
    client_prefetch: int = 0
    client_backlog: int = 0
    # a call in flight longer than stall_after_s gives its slot back and waits in a budget of
    # stalled_calls (0 = 4 * concurrency), so hosts that hang never hold every slot together
    stall_after_s: float = 1.0
    stalled_calls: int = 0
    name: str = field(
        default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    )


@dataclass
class DispatcherStats:
    """Counters of one dispatcher run."""

    claimed: int = 0
    delivered: int = 0
    recorded: int = 0
    expired: int = 0  # claims that could not be called in time (given back)
    given_back: int = 0  # claims handed back unused (late, or claimed ahead at stop)
    discarded: int = 0  # claims dropped by a user change (update, cancel, delete) before the call
    outcomes: dict[str, int] = field(default_factory=dict)


class Dispatcher:
    """Deliver due callbacks of the leased buckets until ``stop`` is set.

    Parameters
    ----------
    dsn:
        The database.
    config:
        Settings (concurrency, timeouts, leases...).
    guard:
        The network guard (default: public addresses only, plus ``PGMBUS_ALLOW_NETWORKS``).
    """

    def __init__(
        self,
        dsn: str,
        config: DispatcherConfig | None = None,
        guard: NetworkGuard | None = None,
    ) -> None:
        self.dsn = dsn
        self.config = config or DispatcherConfig()
        self.guard = guard or NetworkGuard()
        self.name = self.config.name
        self.buckets: list[int] = []
        self.stats = DispatcherStats()
        # claimed callbacks waiting for their run_at: (due, id, callback), a heap
        self._waiting: list[tuple[float, int, Claimed]] = []
        self._waiting_changed = asyncio.Event()
        cfg = self.config
        # due, for the workers: in turns over clients and hosts, with their in-flight bounds
        self._stalled_calls = cfg.stalled_calls or 4 * cfg.concurrency
        self._lanes = Lanes(
            cfg.client_concurrency or max(1, cfg.concurrency * 3 // 4),
            cfg.host_concurrency or max(1, cfg.concurrency // 2),
            slots=cfg.concurrency,
            stall_after_s=cfg.stall_after_s,
            stalled=self._stalled_calls,
        )
        self._client_prefetch = cfg.client_prefetch or max(1, cfg.max_prefetch // 2)
        self._client_backlog = cfg.client_backlog or 2 * cfg.concurrency
        self._held: Counter[int] = Counter()  # claims held (waiting, queued, in flight) by client
        self._busy = 0  # workers calling a URL now
        self._results: list[Delivery] = []
        self._results_added = asyncio.Event()
        self._unused: list[Claimed] = []  # claims to give back, never called
        self._unrecorded = 0  # results and unused claims not yet written (or given up)
        self._started = 0  # calls started, for the rate that bounds the claimed backlog
        # claims dropped by user changes: callback id -> (attempt or None for any, when heard)
        self._changed: dict[int, tuple[int | None, float]] = {}
        self._pool: http11.Pool | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set, then finish the claimed deliveries and release buckets."""
        cfg = self.config
        links = [_Link(self.dsn) for _ in range(4)]
        claim_link, record_link, side_link, listen_link = links
        async with contextlib.AsyncExitStack() as stack:
            for link in links:
                stack.push_async_callback(link.close)
            # keep-alive connections per target, shared by the workers (one per call in flight)
            pool = http11.Pool(
                ssl.create_default_context(),
                max_idle=cfg.concurrency + self._stalled_calls,
                max_body=MAX_RESPONSE_BYTES,
            )
            stack.callback(pool.close)
            self._pool = pool
            if not await self._first_heartbeat(side_link, stop):
                return  # stopped before the database could be reached
            # listening before the first claim, so no change to a claim of ours goes unheard
            listening = await self._listen(listen_link)
            helpers = [
                asyncio.create_task(self._changes_loop(listen_link, listening)),
                asyncio.create_task(self._heartbeat_loop(side_link, stop)),
                asyncio.create_task(self._record_loop(record_link)),
                asyncio.create_task(self._release_loop()),
            ]
            # a worker per slot, and one per stalled call that gave its slot back
            workers = [
                asyncio.create_task(self._worker(pool))
                for _ in range(cfg.concurrency + self._stalled_calls)
            ]
            try:
                await self._claim_loop(claim_link, stop)
            finally:
                await self._drain(workers)
                for task in helpers:
                    task.cancel()
                for task in helpers:
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                with contextlib.suppress(*DB_ERRORS):
                    await store.release(await side_link.get(), self.name)

    async def _drain(self, workers: list[asyncio.Task[None]]) -> None:
        """Deliver what was claimed (it is due within the lookahead), then record it all."""
        cfg = self.config
        await _poll_until(
            lambda: not (self._waiting or self._lanes.qsize() or self._busy),
            cfg.lookahead_s + cfg.timeout_s + cfg.claim_slack_s,
        )
        self._lanes.close()
        _done, pending = await asyncio.wait(workers, timeout=cfg.timeout_s)
        for task in pending:
            task.cancel()
        # what is still claimed and not called goes back, for other dispatchers to take now
        for cb in self._lanes.drain():
            self._give_back(cb)
        for _due, _id, cb in self._waiting:
            self._give_back(cb)
        self._waiting.clear()
        await _poll_until(lambda: not self._unrecorded, 30.0)

    # -- claims ---------------------------------------------------------------------------------
    async def _claim_loop(self, link: _Link, stop: asyncio.Event) -> None:
        cfg = self.config
        loop = asyncio.get_running_loop()
        # claims go on from a cursor (the latest callback claimed): a range scan that skips
        # the callbacks this dispatcher holds. A pass from the head of the index every
        # rescan_interval_s (itself in steps of claim_batch) finds what lies before the
        # cursor: late commits, past run_ats, early retries, expired claims, new buckets.
        cursor: tuple[Any, int] | None = None
        rescan: tuple[Any, int] | None = None  # where a pass from the head has got to
        rescanning = False
        rescan_at = 0.0
        buckets: list[int] = []
        rate, rate_since, started_since = 0.0, loop.time(), 0
        while not stop.is_set():
            now = loop.time()
            if now - rate_since >= 1.0:
                rate = (self._started - started_since) / (now - rate_since)
                rate_since, started_since = now, self._started
            # due callbacks wait for a worker: keep that queue shorter than what the workers
            # start within half the claim slack, or claims would expire before their call
            # (those of clients and hosts at their in-flight bound wait for them, not for any
            # worker: they are bounded by client_prefetch instead)
            allowed = max(2 * cfg.concurrency, int(rate * cfg.claim_slack_s / 2))
            queued = self._lanes.runnable()
            limit = min(
                cfg.claim_batch,
                cfg.max_prefetch - len(self._waiting) - self._lanes.qsize(),
                allowed - queued,
            )
            if buckets != self.buckets:
                buckets = list(self.buckets)
                rescan_at = 0.0
            if not rescanning and (cursor is None or now >= rescan_at):
                rescanning, rescan = True, None
            got, more = 0, False
            if limit > 0 and buckets:
                start = rescan if rescanning else cursor
                try:
                    rows = await self._claim(await link.get(), buckets, limit, start)
                except DB_ERRORS as exc:
                    log.warning("claim failed: %s", exc)
                    rows = []
                    await asyncio.sleep(min(1.0, cfg.bucket_lease_s / 3))
                got = len(rows)
                if rows:
                    position, more = _claimed_up_to(rows, limit)
                    cursor = position if cursor is None or position > cursor else cursor
                    rescan = position
                if rescanning and not more:  # the pass reached the end of what is due
                    rescanning = False
                    rescan_at = now + cfg.rescan_interval_s
                self.stats.claimed += got
                waiting = self._waiting
                for cb in rows:
                    heapq.heappush(waiting, (cb.due, cb.id, cb))
                    self._held[cb.client_id] += 1
                if got:
                    self._waiting_changed.set()
            if more:
                await asyncio.sleep(0)
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(cfg.poll_interval_s):
                    await stop.wait()

    async def _claim(
        self,
        conn: psycopg.AsyncConnection[Any],
        buckets: list[int],
        limit: int,
        cursor: tuple[Any, int] | None,
    ) -> list[Claimed]:
        cfg = self.config
        rows = await store.claim(
            conn,
            self.name,
            buckets,
            limit,
            cfg.timeout_s + cfg.claim_slack_s,
            lookahead_s=cfg.lookahead_s,
            after=cursor,
            skip_clients=self._skipped_clients(),
        )
        return [Claimed(*r) for r in rows]

    def _skipped_clients(self) -> list[int]:
        """The clients not to claim for: those held client_prefetch times and, once half of
        max_prefetch is held, those with client_backlog due and not started (while there is
        room, a client's callbacks to other hosts behind its backlog are still reached)."""
        skip = {c for c, n in self._held.items() if n >= self._client_prefetch}
        if 2 * (len(self._waiting) + self._lanes.qsize()) >= self.config.max_prefetch:
            skip.update(c for c, n in self._lanes.queued().items() if n >= self._client_backlog)
        return sorted(skip)

    async def _release_loop(self) -> None:
        """Hand claimed callbacks to the workers when their run_at has come (never before)."""
        waiting = self._waiting
        lanes = self._lanes
        while True:
            now = time.time()
            while waiting and waiting[0][0] <= now:
                lanes.put(heapq.heappop(waiting)[2])
            self._waiting_changed.clear()
            delay = waiting[0][0] - now if waiting else 1.0
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._waiting_changed.wait()

    # -- deliveries -----------------------------------------------------------------------------
    async def _worker(self, pool: http11.Pool) -> None:
        lanes = self._lanes
        while True:
            cb = await lanes.get()
            if cb is None:
                return
            try:
                await self._call(pool, cb)
            finally:
                lanes.done(cb)

    async def _call(self, pool: http11.Pool, cb: Claimed) -> None:
        cfg = self.config
        if self._was_changed(cb):
            self.stats.discarded += 1  # its claim is gone: nothing to call or record
            self._let_go(cb)
            return
        if cb.until - time.time() < cfg.timeout_s * (cb.fast_retries + 1):
            # waited too long for a worker: the claim could expire mid-call and another
            # dispatcher deliver it too; give it back uncalled (claimed again at once)
            self.stats.expired += 1
            self._give_back(cb)
            return
        self._busy += 1
        self._started += 1
        started = time.time()
        try:
            result = await deliver(
                pool,
                self.guard,
                cb,
                timeout_s=cfg.timeout_s,
                fast_retry_delay_s=cfg.fast_retry_delay_s,
            )
        except Exception as exc:  # deliver records its calls' crashes: this is the last net
            # a bug must neither kill the worker nor leave the claim unrecorded (pending for
            # ever, called again at each expiry): an error, retried as its policy says
            log.exception("delivery of callback %s crashed", cb.id)
            result = Delivery(cb, "error", [crashed(0, started, exc)])
        finally:
            self._busy -= 1
        self.stats.delivered += 1
        self.stats.outcomes[result.outcome] = self.stats.outcomes.get(result.outcome, 0) + 1
        self._results.append(result)
        self._unrecorded += 1
        self._results_added.set()
        self._let_go(cb)

    # -- user changes ---------------------------------------------------------------------------
    async def _listen(self, link: _Link) -> psycopg.AsyncConnection[Any] | None:
        try:
            conn = await link.get()
            await store.listen_changes(conn)
            return conn
        except DB_ERRORS as exc:
            log.warning("listen for changes failed: %s", exc)
            return None

    async def _changes_loop(self, link: _Link, conn: psycopg.AsyncConnection[Any] | None) -> None:
        """Note the claims that user changes dropped, as their notifications arrive.

        While the connection is down, changes go unheard: a claim dropped then is still called
        (its result is ignored), as it would be if the change came during the call."""
        while True:
            if conn is None:
                await asyncio.sleep(1.0)
                conn = await self._listen(link)
                continue
            try:
                async for note in conn.notifies():
                    self._note_change(note.payload)
            except psycopg.Error as exc:
                log.warning("listening for changes failed: %s", exc)
            conn = None

    def _note_change(self, payload: str) -> None:
        ident, _, attempt = payload.partition(":")
        try:
            key, value = int(ident), (int(attempt) if attempt else None)
        except ValueError:
            return
        now = time.monotonic()
        changed = self._changed
        changed[key] = (value, now)
        if len(changed) > 10_000:  # forget what no claim of ours can still hold
            horizon = now - self.config.lookahead_s - 60.0
            for k in [k for k, (_, at) in changed.items() if at < horizon]:
                del changed[k]

    def _was_changed(self, cb: Claimed) -> bool:
        change = self._changed.get(cb.id)
        return change is not None and change[0] in (None, cb.attempt)

    def _let_go(self, cb: Claimed) -> None:
        """A claim is no longer held here (called, given back or dropped)."""
        held = self._held
        held[cb.client_id] -= 1
        if held[cb.client_id] <= 0:
            del held[cb.client_id]

    def _give_back(self, cb: Claimed) -> None:
        self._let_go(cb)
        self._unused.append(cb)
        self._unrecorded += 1
        self._results_added.set()

    # -- recording ----------------------------------------------------------------------------
    async def _record_loop(self, link: _Link) -> None:
        """Write results (and give back unused claims) in batches, one statement each."""
        cfg = self.config
        while True:
            await self._results_added.wait()
            await asyncio.sleep(cfg.record_interval_s)
            batch = self._results[: cfg.record_batch]
            del self._results[: cfg.record_batch]
            unused, self._unused = self._unused, []
            if not self._results:
                self._results_added.clear()
            if unused:
                give_back = functools.partial(
                    store.unclaim,
                    dispatcher=self.name,
                    ids=[cb.id for cb in unused],
                    attempts=[cb.attempt for cb in unused],
                )
                if await self._write(link, "unclaim", give_back, len(unused)):
                    self.stats.given_back += len(unused)
                self._unrecorded -= len(unused)
            if batch:
                write = functools.partial(
                    store.record, results=[d.as_json(self.name) for d in batch]
                )
                if await self._write(link, "record", write, len(batch)):
                    self.stats.recorded += len(batch)
                self._unrecorded -= len(batch)

    async def _write(
        self,
        link: _Link,
        what: str,
        call: Callable[[psycopg.AsyncConnection[Any]], Awaitable[None]],
        count: int,
    ) -> bool:
        """Run a write of the record connection, retried over broken connections."""
        for attempt in range(5):
            try:
                await call(await link.get())
                return True
            except DB_ERRORS as exc:
                log.warning("%s of %d failed (try %d): %s", what, count, attempt + 1, exc)
                await asyncio.sleep(0.2 * 2**attempt)
        return False  # the claims expire: the callbacks are claimed again later

    # -- heartbeat, schedules, cleanup --------------------------------------------------------
    async def _heartbeat(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.buckets = await store.heartbeat(conn, self.name, self.config.bucket_lease_s)

    async def _first_heartbeat(self, link: _Link, stop: asyncio.Event) -> bool:
        """Register and learn our buckets, retried with backoff while the database cannot be
        reached (a start during a restart, a cut connection); False when ``stop`` came first."""
        backoff = Backoff(cap=min(5.0, self.config.bucket_lease_s))
        while not stop.is_set():
            try:
                await self._heartbeat(await link.get())
                return True
            except DB_ERRORS as exc:
                if not is_transient(exc):
                    raise
                delay = backoff.next()
                log.warning(
                    "dispatcher %s cannot start yet, retrying in %.2fs: %s", self.name, delay, exc
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
        return False

    async def _heartbeat_loop(self, link: _Link, stop: asyncio.Event) -> None:
        cfg = self.config
        loop = asyncio.get_running_loop()
        last_ok = loop.time()
        next_beat = loop.time() + cfg.bucket_lease_s / 3
        next_schedule = loop.time()
        next_clean = loop.time()
        next_sweep = loop.time()
        while not stop.is_set():
            now = loop.time()
            try:
                conn = await link.get()
                if now >= next_beat:
                    await self._heartbeat(conn)
                    last_ok = now
                    next_beat = now + cfg.bucket_lease_s / 3
                if cfg.schedules and now >= next_schedule:
                    await scheduler.generate(conn, horizon_s=cfg.schedule_horizon_s)
                    next_schedule = now + cfg.schedule_interval_s
                if now >= next_clean:
                    await store.clean_if_due(conn, cfg.clean_ttl_days, cfg.clean_every_s)
                    next_clean = now + 3600
                if self._pool is not None and now >= next_sweep:
                    self._pool.sweep()  # connections idle too long, to hosts gone quiet
                    next_sweep = now + 5.0
            except Exception as exc:  # keep heartbeating whatever a pass raised
                log.warning("heartbeat/scheduler failed: %s", exc)
                if loop.time() - last_ok > cfg.bucket_lease_s:
                    self.buckets = []  # our leases have expired: others own them now
                await asyncio.sleep(min(1.0, cfg.bucket_lease_s / 3))
                continue
            await asyncio.sleep(0.1)


def _claimed_up_to(rows: list[Claimed], limit: int) -> tuple[tuple[Any, int], bool]:
    """Where a claim got to, and whether more may be due there.

    A claim gives each client a share of the batch: a client that filled it (about ``limit``
    over the clients claimed) may have more, so the next claim starts from the lowest last
    position of those clients (not to skip the rest of their callbacks until a rescan) and
    comes at once; when none did, from the last callback claimed."""
    counts: Counter[int] = Counter()
    last: dict[int, tuple[Any, int]] = {}
    for cb in rows:  # in (run_at, id) order
        counts[cb.client_id] += 1
        last[cb.client_id] = (cb.run_at, cb.id)
    share = max(1, limit // len(counts))
    full = [last[c] for c, n in counts.items() if n >= share]
    if full:
        return min(full), True
    return max(last.values()), False


async def _poll_until(done: Callable[[], bool], timeout_s: float) -> None:
    for _ in range(max(1, int(timeout_s / 0.02))):
        if done():
            return
        await asyncio.sleep(0.02)


async def run_dispatcher(
    dsn: str,
    config: DispatcherConfig | None = None,
    guard: NetworkGuard | None = None,
    stop: asyncio.Event | None = None,
) -> DispatcherStats:
    """Run a dispatcher until ``stop`` is set (or forever); return its counters."""
    dispatcher = Dispatcher(dsn, config, guard)
    await dispatcher.run(stop or asyncio.Event())
    return dispatcher.stats
