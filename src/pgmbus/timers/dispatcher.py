"""The dispatcher: leases buckets, claims due callbacks, calls their URLs, records results.

One asyncio process runs these loops on three connections:

* heartbeat: ``mbus.timer_heartbeat`` every ``bucket_lease_s / 3`` keeps its bucket leases and
  takes its fair share of buckets (a dead dispatcher's buckets are free once their lease ends);
* claim: every ``poll_interval_s`` (or at once while there is more), ``mbus.timer_claim`` takes
  callbacks of its buckets due within ``lookahead_s`` in (run_at, id) order; each waits for its
  run_at, then is called with at most ``concurrency`` HTTP calls in flight;
* record: finished deliveries are written in batches with ``mbus.timer_record``;
* scheduler and maintenance: schedules are materialized ahead of time, and the daily cleanup
  runs (one dispatcher of many does it).

A claim holds a callback for ``(timeout_s + slack) * (fast_retries + 1)``; a dispatcher that
dies before recording loses its claims when they expire and the callback is delivered again
(same ``webhook-id``, next attempt number).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
from psycopg.types.json import Jsonb

from pgmbus.timers import scheduler
from pgmbus.timers.delivery import Claimed, Delivery, deliver
from pgmbus.timers.netguard import NetworkGuard
from pgmbus.timers.store import _q

log = logging.getLogger("pgmbus.timers.dispatcher")
CLIENT_POOL_SIZE = 8


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
    lookahead_s: float = 0.5
    max_prefetch: int = 2000
    bucket_lease_s: float = 10.0
    claim_slack_s: float = 5.0
    claim_batch: int = 200
    record_interval_s: float = 0.02
    fast_retry_delay_s: float = 0.05
    schedules: bool = True
    schedule_interval_s: float = 1.0
    schedule_horizon_s: float = 300.0
    clean_ttl_days: int = 30
    clean_every_s: float = 86400.0
    name: str = field(
        default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    )


@dataclass
class DispatcherStats:
    """Counters of one dispatcher run."""

    claimed: int = 0
    delivered: int = 0
    recorded: int = 0
    expired: int = 0
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
        self._inflight: set[asyncio.Task[None]] = set()
        self._results: asyncio.Queue[Delivery] = asyncio.Queue()
        self._slot_free = asyncio.Event()
        self._http_slots = asyncio.Semaphore(self.config.concurrency)
        self._ready = 0  # deliveries due now and waiting for an HTTP slot

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set, then finish deliveries in flight and release buckets."""
        cfg = self.config
        links = [_Link(self.dsn) for _ in range(3)]
        claim_link, record_link, side_link = links
        async with contextlib.AsyncExitStack() as stack:
            for link in links:
                stack.push_async_callback(link.close)
            # httpcore scans every pooled connection for each request; small pools keep that
            # scan short, so deliveries are spread over several clients
            size = min(cfg.concurrency, CLIENT_POOL_SIZE)
            tls = ssl.create_default_context()
            limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
            clients = [
                await stack.enter_async_context(
                    httpx.AsyncHTTPTransport(verify=tls, limits=limits, trust_env=False)
                )
                for _ in range(max(1, -(-cfg.concurrency // size)))
            ]
            await self._heartbeat(await side_link.get())
            helpers = [
                asyncio.create_task(self._heartbeat_loop(side_link, stop)),
                asyncio.create_task(self._record_loop(record_link)),
            ]
            try:
                await self._claim_loop(claim_link, clients, stop)
            finally:
                if self._inflight:
                    await asyncio.wait(self._inflight, timeout=cfg.timeout_s + cfg.claim_slack_s)
                await self._results.join()
                for task in helpers:
                    task.cancel()
                for task in helpers:
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                with contextlib.suppress(psycopg.Error):
                    await (await side_link.get()).execute(_q("release"), {"dispatcher": self.name})

    # -- claims and deliveries ----------------------------------------------------------------
    async def _claim_loop(
        self,
        link: _Link,
        clients: list[httpx.AsyncHTTPTransport],
        stop: asyncio.Event,
    ) -> None:
        cfg = self.config
        while not stop.is_set():
            free = cfg.max_prefetch - len(self._inflight)
            got = 0
            # claim only what the HTTP slots can start soon: claims waiting too long would
            # expire and be delivered twice
            limit = min(free, cfg.claim_batch, 2 * cfg.concurrency - self._ready)
            if limit > 0 and self.buckets:
                try:
                    rows = await self._claim(await link.get(), limit)
                except psycopg.Error as exc:
                    log.warning("claim failed: %s", exc)
                    rows = []
                    await asyncio.sleep(min(1.0, cfg.bucket_lease_s / 3))
                got = len(rows)
                for cb in rows:
                    client = clients[self.stats.claimed % len(clients)]
                    self.stats.claimed += 1
                    task = asyncio.create_task(self._deliver(client, cb))
                    self._inflight.add(task)
                    task.add_done_callback(self._done)
            if got and got == limit:
                await asyncio.sleep(0)
                continue
            self._slot_free.clear()
            wait_for: list[asyncio.Task[bool]] = [asyncio.create_task(stop.wait())]
            if free <= 0:
                wait_for.append(asyncio.create_task(self._slot_free.wait()))
            _done, pending = await asyncio.wait(
                wait_for, timeout=cfg.poll_interval_s, return_when=asyncio.FIRST_COMPLETED
            )
            for waiter in pending:
                waiter.cancel()

    async def _claim(self, conn: psycopg.AsyncConnection[Any], limit: int) -> list[Claimed]:
        cfg = self.config
        params = {
            "dispatcher": self.name,
            "buckets": self.buckets,
            "limit": limit,
            "lease_s": cfg.timeout_s + cfg.claim_slack_s,
            "now": None,
            "lookahead_s": cfg.lookahead_s,
        }
        cur = await conn.execute(_q("claim"), params)
        return [Claimed(*r) for r in await cur.fetchall()]

    def _done(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self._slot_free.set()

    async def _deliver(self, client: httpx.AsyncHTTPTransport, cb: Claimed) -> None:
        cfg = self.config
        try:
            wait = (cb.run_at - datetime.now(UTC)).total_seconds()
            if wait > 0:  # claimed within the lookahead: call at run_at, not before
                await asyncio.sleep(wait)
            self._ready += 1
            try:
                await self._http_slots.acquire()
            finally:
                self._ready -= 1
            try:
                left = (cb.claimed_until - datetime.now(UTC)).total_seconds()
                if left < cfg.timeout_s * (cb.fast_retries + 1):
                    # waited too long for a slot: the claim could expire mid-call and another
                    # dispatcher deliver it too; let it expire instead, unrecorded
                    self.stats.expired += 1
                    return
                result = await deliver(
                    client,
                    self.guard,
                    cb,
                    timeout_s=cfg.timeout_s,
                    fast_retry_delay_s=cfg.fast_retry_delay_s,
                )
            finally:
                self._http_slots.release()
        except Exception:  # a bug must not kill the loop; the claim expires and is retried
            log.exception("delivery of callback %s crashed", cb.id)
            return
        self.stats.delivered += 1
        self.stats.outcomes[result.outcome] = self.stats.outcomes.get(result.outcome, 0) + 1
        await self._results.put(result)

    # -- recording ----------------------------------------------------------------------------
    async def _record_loop(self, link: _Link) -> None:
        cfg = self.config
        while True:
            batch = [await self._results.get()]
            await asyncio.sleep(cfg.record_interval_s)
            while not self._results.empty() and len(batch) < 1000:
                batch.append(self._results.get_nowait())
            payload = [d.as_json(self.name) for d in batch]
            for attempt in range(5):
                try:
                    conn = await link.get()
                    cur = await conn.execute(_q("record"), {"results": Jsonb(payload), "now": None})
                    await cur.fetchone()
                    self.stats.recorded += len(batch)
                    break
                except psycopg.Error as exc:
                    log.warning("recording %d results failed (%d): %s", len(batch), attempt, exc)
                    await asyncio.sleep(0.2 * 2**attempt)
            for _ in batch:
                self._results.task_done()

    # -- heartbeat, schedules, cleanup --------------------------------------------------------
    async def _heartbeat(self, conn: psycopg.AsyncConnection[Any]) -> None:
        params = {"dispatcher": self.name, "lease_s": self.config.bucket_lease_s, "now": None}
        cur = await conn.execute(_q("heartbeat"), params)
        row = await cur.fetchone()
        self.buckets = list(row[0]) if row else []

    async def _heartbeat_loop(self, link: _Link, stop: asyncio.Event) -> None:
        cfg = self.config
        loop = asyncio.get_running_loop()
        last_ok = loop.time()
        next_beat = loop.time() + cfg.bucket_lease_s / 3
        next_schedule = loop.time()
        next_clean = loop.time()
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
                    cur = await conn.execute(
                        _q("clean_if_due"),
                        {"ttl_days": cfg.clean_ttl_days, "every_s": cfg.clean_every_s, "now": None},
                    )
                    await cur.fetchone()
                    next_clean = now + 3600
            except Exception as exc:  # keep heartbeating whatever a pass raised
                log.warning("heartbeat/scheduler failed: %s", exc)
                if loop.time() - last_ok > cfg.bucket_lease_s:
                    self.buckets = []  # our leases have expired: others own them now
                await asyncio.sleep(min(1.0, cfg.bucket_lease_s / 3))
                continue
            await asyncio.sleep(0.1)


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
