"""The queue worker's loop: claim for the free slots, run handlers, report back in batches."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
import time
from collections.abc import Awaitable
from typing import Any

from pgmbus.handlers import HandlerTimeout, QueueHandler
from pgmbus.queues._bus_async import AsyncBus, Wakeups
from pgmbus.queues.model import Message
from pgmbus.queues.processes import HandlerProcesses
from pgmbus.queues.reports import HandlerStats, Meter, Reporter
from pgmbus.queues.threads import Call, HandlerThreads
from pgmbus.reconnect import Backoff, is_transient

ACK_WINDOW = 0.002
"""Seconds an ack waits for others to share its statement (the handlers that return together)."""


class QueueLoop:
    """Run one :class:`~pgmbus.handlers.QueueHandler`: ``concurrency`` slots on a shared bus.

    One claimer leases as many messages as there is room for (free slots plus ``prefetch``
    claimed ahead, so the slots do not idle during a claim's round trip) and listens for the
    queue's NOTIFY on one connection; each message runs in a task (an ``async def`` handler) or
    in one of ``concurrency`` reused threads (a plain ``def``). Acks wait at most
    :data:`ACK_WINDOW` to share one statement; one statement per half lease extends the lease
    of every message in hand.

    ``stop`` ends claiming; ``abort`` gives the messages in hand back (nack, no delay) without
    waiting for their handlers. ``healthy`` is False while the database cannot be reached.
    """

    def __init__(
        self,
        bus: AsyncBus,
        spec: QueueHandler,
        *,
        prefetch: int | None = None,
        meter: Meter | None = None,
    ) -> None:
        self.bus = bus
        self.spec = spec
        self.stats = HandlerStats()
        self.healthy = True
        self.log = logging.getLogger(f"pgmbus.handler.{spec.name}")
        self.prefetch = spec.concurrency if prefetch is None else prefetch
        self._reporter = Reporter(bus, self.stats, self.log, spec.name, meter)
        self._in_hand: dict[Any, Message] = {}  # by lease token: claimed, not yet finished
        self._unkept: set[Any] = set()  # tokens whose lease was lost: not extended any more
        self._waiting = 0  # claimed messages that wait for a slot
        # the next claim goes out once no more than this many wait: its round trip overlaps
        # the last claimed ones' runs instead of following them
        self._refill = self.prefetch // 2
        self._changed = asyncio.Event()  # a message started or finished: the claimer looks
        self._ack_due = asyncio.Event()  # an ack is pending: the ack flusher looks
        self._fatal: BaseException | None = None
        self._closing = False
        self._aborting = False
        self._due_again = False  # a message given back is due before the next poll
        self._calls: set[asyncio.Future[Any]] = set()  # the handlers running

    async def run(self, stop: asyncio.Event, abort: asyncio.Event, *, drain: bool = False) -> None:
        """Claim and handle until ``stop`` (or, with ``drain``, until the queue has none due)."""
        slots = asyncio.Semaphore(self.spec.concurrency)
        threads = await self._runner()
        tasks: set[asyncio.Task[None]] = set()
        keeper = asyncio.create_task(self._keep_leased())
        acks = asyncio.create_task(self._acks())
        watchers = [
            asyncio.create_task(self._on_stop(stop)),
            asyncio.create_task(self._on_abort(abort)),
        ]
        try:
            await self._claim_loop(stop, abort, drain, slots, threads, tasks)
        finally:
            while tasks:  # claimed: in hand, finished even when stopping
                await asyncio.wait(set(tasks))
            for watcher in watchers:
                watcher.cancel()
            keeper.cancel()  # an extension cut short changes nothing that matters now
            self._closing = True  # the acks' flusher ends after its last flush: never cut
            self._ack_due.set()
            await asyncio.gather(keeper, acks, *watchers, return_exceptions=True)
            if threads is not None:
                threads.close()
        if self._fatal is not None:
            raise self._fatal

    async def _runner(self) -> HandlerThreads | HandlerProcesses | None:
        """Where a plain ``def`` runs: threads, or child processes that a time limit kills."""
        if self.spec.is_async:
            return None
        if self.spec.pool == "process":
            processes = HandlerProcesses(self.spec.concurrency, self.spec.name)
            await processes.start(self.spec.fn)  # not importable: the error names it, now
            return processes
        return HandlerThreads(self.spec.concurrency, self.spec.name)

    # --- claiming -----------------------------------------------------------------------------

    async def _claim_loop(
        self,
        stop: asyncio.Event,
        abort: asyncio.Event,
        drain: bool,
        slots: asyncio.Semaphore,
        threads: HandlerThreads | HandlerProcesses | None,
        tasks: set[asyncio.Task[None]],
    ) -> None:
        backoff = Backoff()
        listening = contextlib.AsyncExitStack()
        wakeups: Wakeups | None = None
        look = True  # whether the queue may have messages we did not see yet
        try:
            while not stop.is_set():
                self._changed.clear()
                if self._fatal is not None:
                    raise self._fatal
                room = self.spec.concurrency + self.prefetch - len(self._in_hand)
                look = look or self._due_again
                self._due_again = False
                if room <= 0 or self._waiting > self._refill or not look:
                    # the slots are full, or the queue was seen empty while we listen
                    look = await self._pause(wakeups) or look
                    continue
                try:
                    got = await self._lease_now(abort, room)
                    if got is not None and not got and not drain and wakeups is None:
                        wakeups = await listening.enter_async_context(
                            self.bus.wakeups(self.spec.queue)
                        )
                        continue  # look again now that we listen: no post slips in between
                except Exception as exc:
                    if not is_transient(exc):
                        self.log.exception(
                            "claiming from %s/%s failed; the handler stops",
                            self.spec.queue,
                            self.spec.consumer,
                        )
                        raise
                    await _quietly(listening.aclose())
                    wakeups = None
                    await self._wait_out(exc, backoff, stop)
                    continue
                backoff.reset()
                self.healthy = True
                if got is None:
                    return
                if not got and drain:
                    # done when nothing is in hand and nothing was given back during the claim
                    if not self._in_hand and not self._changed.is_set():
                        return
                    if self._in_hand:
                        await self._pause(None)  # what is in hand may come back due
                    continue
                for message in got:
                    self._start(message, abort, slots, threads, tasks)
                # a short claim saw the queue empty: wait for its NOTIFY (or the poll)
                look = len(got) == room or wakeups is None
        finally:
            await _quietly(listening.aclose())

    async def _wait_out(self, exc: Exception, backoff: Backoff, stop: asyncio.Event) -> None:
        self.healthy = False
        self.stats.reconnects += 1
        wait = backoff.next()
        self.log.warning(
            "cannot claim from %s/%s, retrying in %.2fs: %s",
            self.spec.queue,
            self.spec.consumer,
            wait,
            exc,
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), wait)

    async def _pause(self, wakeups: Wakeups | None) -> bool:
        """Wait for a change in hand (or ``stop``), or the queue's wake-up or poll time; True
        when the queue is to be looked at again (woken or polled)."""
        if wakeups is None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.spec.poll_interval):
                    await self._changed.wait()
                    return False
            return True
        changed = asyncio.ensure_future(self._changed.wait())
        woken = asyncio.ensure_future(wakeups.wait(self.spec.poll_interval))
        try:
            await asyncio.wait({changed, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            changed.cancel()
            woken.cancel()  # no statement runs in a wait: safe to leave
            await asyncio.gather(changed, woken, return_exceptions=True)
        return woken.done() and not woken.cancelled()

    async def _on_stop(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self._changed.set()  # the claimer, waiting for a change, sees the stop

    async def _on_abort(self, abort: asyncio.Event) -> None:
        """At abort, cut the handlers in hand short (their messages are given back)."""
        await abort.wait()
        self._aborting = True
        for call in list(self._calls):
            call.cancel()
        self._changed.set()

    async def _lease_now(self, abort: asyncio.Event, limit: int) -> list[Message] | None:
        """One lease statement (no wait); None when ``abort`` cut it short.

        Only ``abort`` cancels a lease statement, never ``stop``: cancelled mid-statement,
        psycopg cancels it at the server and raises, and a lease that completed before the
        cancel landed would be dropped, its message leased to no one until the lease ends, an
        attempt spent without a handler. At abort the worker is about to exit and must not
        hang on a statement (one stuck behind a lock, say).
        """
        claim = asyncio.ensure_future(
            self.bus.lease(
                self.spec.queue,
                self.spec.consumer,
                limit=limit,
                lease=self.spec.lease,
                max_attempts=self.spec.retry.max_attempts,
            )
        )
        aborting = asyncio.ensure_future(abort.wait())
        try:
            await asyncio.wait({claim, aborting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborting.cancel()
        if claim.done():  # finished, even together with abort: handled (or given back) below
            return claim.result()
        claim.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await claim
        return None

    # --- the messages in hand ------------------------------------------------------------------

    def _start(
        self,
        message: Message,
        abort: asyncio.Event,
        slots: asyncio.Semaphore,
        threads: HandlerThreads | HandlerProcesses | None,
        tasks: set[asyncio.Task[None]],
    ) -> None:
        self._in_hand[message.lease_token] = message
        self._waiting += 1
        task = asyncio.create_task(self._run_one(message, abort, slots, threads))
        tasks.add(task)
        task.add_done_callback(self._ended(tasks))

    def _ended(self, tasks: set[asyncio.Task[None]]) -> Any:
        def ended(task: asyncio.Task[None]) -> None:
            tasks.discard(task)
            if not task.cancelled() and task.exception() is not None and self._fatal is None:
                self._fatal = task.exception()  # a bug: the loop stops and raises it
            # the claimer claims once the claimed ones have started: waking it before (a
            # turn of its loop, for nothing) cost more than the job itself
            if self._waiting <= self._refill or self._fatal is not None:
                self._changed.set()

        return ended

    async def _run_one(
        self,
        message: Message,
        abort: asyncio.Event,
        slots: asyncio.Semaphore,
        threads: HandlerThreads | HandlerProcesses | None,
    ) -> None:
        try:
            async with slots:
                self._waiting -= 1
                if self._waiting == self._refill:  # the claimer waits for the claimed to start
                    self._changed.set()
                if abort.is_set():
                    self._given_back(message)
                    await self._reporter.finish(message, "give back")
                    return
                await self._process(message, abort, threads)
        finally:
            self._in_hand.pop(message.lease_token, None)
            self._unkept.discard(message.lease_token)

    async def _process(
        self,
        message: Message,
        abort: asyncio.Event,
        threads: HandlerThreads | HandlerProcesses | None,
    ) -> None:
        self._reporter.meter.started()
        ended: list[bool] = []  # the outcome told to the meter: told before the reports
        try:
            await self._call(message, abort, threads, ended)
        finally:
            if not ended:  # cut short (given back at shutdown, or a bug)
                self._reporter.meter.ended(None, False)

    async def _call(
        self,
        message: Message,
        abort: asyncio.Event,
        threads: HandlerThreads | HandlerProcesses | None,
        ended: list[bool],
    ) -> None:
        returned: Call | threading.Event | None = None
        started = time.perf_counter()
        if threads is None:
            call: asyncio.Future[Any] = asyncio.ensure_future(self.spec.fn(message))
        else:
            call, returned = threads.submit(self.spec.fn, message)
        self._calls.add(call)
        try:
            done, _ = await asyncio.wait({call}, timeout=self.spec.timeout)
        finally:
            self._calls.discard(call)
        aborted = self._aborting and call.cancelled()
        if call in done and not aborted:
            # a handler that cancelled itself (CancelledError escaping it) failed its attempt
            error = (
                asyncio.CancelledError("the handler was cancelled")
                if call.cancelled()
                else call.exception()
            )
            result = None if error is not None else call.result()
            if result is not None and inspect.isawaitable(result):
                error = await _outcome(result)  # a plain function that returned a coroutine
            ended.append(True)
            self._reporter.meter.ended(time.perf_counter() - started, error is not None)
            if error is None:
                self._reporter.pending.append(message)  # acked at the next flush
                self._ack_due.set()
            else:
                await self._failed(message, error)
            return
        call.cancel()
        if aborted:
            self._given_back(message)
            await self._reporter.finish(message, "give back")
            return
        self.stats.timed_out += 1
        ended.append(True)
        self._reporter.meter.ended(time.perf_counter() - started, True)
        how = "cancelled" if threads is None else "its thread goes on, its result is ignored"
        if isinstance(threads, HandlerProcesses):
            how = "its process is killed"
            self._reporter.meter.killed()
        self.log.error(
            "message %s timed out after %ss (%s)",
            message.iid,
            self.spec.timeout,
            how,
            extra=self._reporter.fields(message),
        )
        await self._failed(message, HandlerTimeout(f"handler exceeded {self.spec.timeout}s"))
        # The slot waits for the runaway thread before it is free again, so a handler never
        # has more than ``concurrency`` threads; ``abort`` (shutdown) stops the wait.
        while returned is not None and not returned.is_set() and not abort.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(abort.wait(), 0.05)

    def _given_back(self, message: Message) -> None:
        self.log.warning(
            "message %s given back at shutdown (its handler did not finish in time)",
            message.iid,
            extra=self._reporter.fields(message),
        )

    async def _failed(self, message: Message, error: BaseException) -> None:
        reason = f"{type(error).__name__}: {error}"
        self.stats.failed += 1
        self.stats.errors.append(reason)
        extra = self._reporter.fields(message)
        policy = self.spec.retry
        if policy.retries(error) and message.attempts < policy.max_attempts:
            delay = policy.delay(message.attempts)
            self.log.warning(
                "message %s failed (attempt %s of %s), retry in %.2fs: %s",
                message.iid,
                message.attempts,
                policy.max_attempts,
                delay,
                reason,
                exc_info=error,
                extra=extra,
            )
            await self._reporter.finish(message, "retry", delay=delay)
            if delay < self.spec.poll_interval:  # no NOTIFY says it is back: look for it
                self._due_again = True
                self._changed.set()
            return
        why = "not retried" if not policy.retries(error) else "attempts exhausted"
        self.log.error(
            "message %s buried in the dmq (%s): %s",
            message.iid,
            why,
            reason,
            exc_info=error,
            extra=extra,
        )
        await self._reporter.finish(message, "bury", reason=reason)

    # --- the helpers: acks, lease heartbeat -----------------------------------------------------

    async def _acks(self) -> None:
        """Flush the pending acks as they come, each flush taking those of one short window."""
        while True:
            while not self._reporter.pending:
                if self._closing:
                    return
                self._ack_due.clear()
                await self._ack_due.wait()
            if not self._closing:
                await asyncio.sleep(ACK_WINDOW)
            try:
                await self._reporter.flush()
            except Exception as exc:  # not a lost database (flush keeps those): a bug
                self._fatal = self._fatal or exc
                self._changed.set()
                return

    async def _keep_leased(self) -> None:
        """Every half lease, extend the lease of every message in hand in one statement."""
        while True:
            await asyncio.sleep(self.spec.lease / 2)
            kept = [m for t, m in self._in_hand.items() if t not in self._unkept]
            lost = await self._reporter.extend(kept, self.spec.lease)
            self._unkept.update(m.lease_token for m in lost)


async def _outcome(awaitable: Awaitable[Any]) -> BaseException | None:
    try:
        await awaitable
    except Exception as exc:
        return exc
    return None


async def _quietly(closing: Awaitable[Any]) -> None:
    """Stop listening; on a connection that a lost database broke, the pool discards it."""
    try:
        await closing
    except Exception as exc:
        if not is_transient(exc):
            raise
