"""One queue handler's slots: lease, run with a time limit, ack, retry or bury per its policy."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pgmbus.errors import StaleLease
from pgmbus.handlers import HandlerTimeout, QueueHandler
from pgmbus.queues._bus_async import AsyncBus
from pgmbus.queues.model import Message
from pgmbus.queues.worker import WorkerConfig, _keep_leased
from pgmbus.reconnect import Backoff, is_transient


@dataclass
class HandlerStats:
    """What one handler did.

    ``lost`` counts messages whose lease had ended when the worker reported on them (another
    delivery owns them); ``unreported`` those whose ack, nack or bury did not reach the
    database (down, connection lost): handled, but the database still counts the delivery as
    an attempt, and a message that reaches ``max_attempts`` that way is buried with
    ``unreported`` set and a reason saying so, not as a handler failure.
    """

    done: int = 0
    retried: int = 0
    dead: int = 0
    lost: int = 0
    timed_out: int = 0
    given_back: int = 0
    reconnects: int = 0
    unreported: int = 0

    def summary(self) -> str:
        """``N done, R retried, D dead, L lost, T timed out, G given back, U unreported``."""
        return (
            f"{self.done} done, {self.retried} retried, {self.dead} dead, {self.lost} lost, "
            f"{self.timed_out} timed out, {self.given_back} given back, "
            f"{self.unreported} unreported"
        )


def _in_thread(
    fn: Callable[[Message], Any], message: Message, name: str
) -> tuple[asyncio.Future[Any], threading.Thread]:
    """Run ``fn(message)`` in a daemon thread; a future of its result and the thread
    (cancelling the future only detaches the thread: Python cannot stop one, and a daemon does
    not hold up the process's exit)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def target() -> None:
        try:
            result, error = fn(message), None
        except BaseException as exc:  # handed to the loop, which decides
            result, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop is gone: the worker has stopped
            loop.call_soon_threadsafe(settle, result, error)

    thread = threading.Thread(target=target, name=f"pgmbus:{name}", daemon=True)
    thread.start()
    return future, thread


class QueueLoop:
    """Run one :class:`~pgmbus.handlers.QueueHandler`: ``concurrency`` slots on a shared bus.

    ``stop`` ends claiming; ``abort`` gives the messages in hand back (nack, no delay) without
    waiting for their handlers. ``healthy`` is False while the database cannot be reached.
    """

    def __init__(self, bus: AsyncBus, spec: QueueHandler) -> None:
        self.bus = bus
        self.spec = spec
        self.stats = HandlerStats()
        self.healthy = True
        self.log = logging.getLogger(f"pgmbus.handler.{spec.name}")
        self._config = WorkerConfig(
            queue=spec.queue,
            consumer=spec.consumer,
            concurrency=spec.concurrency,
            lease=spec.lease,
            max_attempts=spec.retry.max_attempts,
            poll_interval=spec.poll_interval,
        )

    def _extra(self, message: Message) -> dict[str, Any]:
        return {
            "handler": self.spec.name,
            "queue": self.spec.queue,
            "consumer": self.spec.consumer,
            "iid": message.iid,
            "attempt": message.attempts,
        }

    async def run(self, stop: asyncio.Event, abort: asyncio.Event, *, drain: bool = False) -> None:
        """Claim and handle until ``stop`` (or, with ``drain``, until the queue has none due)."""
        slots = [self._slot(stop, abort, drain) for _ in range(self.spec.concurrency)]
        await asyncio.gather(*slots)

    async def _slot(self, stop: asyncio.Event, abort: asyncio.Event, drain: bool) -> None:
        backoff = Backoff()
        while not stop.is_set():
            try:
                messages = await self._claim(stop, abort, drain)
            except Exception as exc:
                if not is_transient(exc):
                    self.log.exception(
                        "claiming from %s/%s failed; the handler stops",
                        self.spec.queue,
                        self.spec.consumer,
                    )
                    raise
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
                continue
            backoff.reset()
            self.healthy = True
            if messages is None or (not messages and drain):
                return
            for message in messages:  # claimed: in hand, finished even when stopping
                await self._process(message, abort)

    async def _claim(
        self, stop: asyncio.Event, abort: asyncio.Event, drain: bool
    ) -> list[Message] | None:
        """Lease one message, waiting up to the poll interval; None when ``stop`` came first.

        Only the wait for the queue's NOTIFY is abandoned when ``stop`` is set, never a lease
        statement: cancelled mid-statement, psycopg cancels it at the server and raises, and a
        lease that completed before the cancel landed would be dropped, its message leased to
        no one until the lease ends, an attempt spent without a handler. A lease running when
        ``stop`` comes finishes, and what it claimed is work in hand. ``abort`` (the grace
        period is over) does cancel it: see :meth:`_lease_now`.
        """
        got = await self._lease_now(abort)
        if got is None or got or drain:
            return got
        deadline = time.monotonic() + self.spec.poll_interval
        async with self.bus.wakeups(self.spec.queue) as wakeups:
            while not stop.is_set():
                got = await self._lease_now(abort)  # after LISTEN: no post slips in between
                remaining = deadline - time.monotonic()
                if got is None or got or remaining <= 0:
                    return got
                woken = asyncio.ensure_future(wakeups.wait(remaining))
                stopping = asyncio.ensure_future(stop.wait())
                try:
                    await asyncio.wait({woken, stopping}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stopping.cancel()
                    woken.cancel()  # no statement runs in the wait: safe to leave
                    with contextlib.suppress(asyncio.CancelledError):
                        await woken
        return None

    async def _lease_now(self, abort: asyncio.Event) -> list[Message] | None:
        """One lease statement (no wait); None when ``abort`` cut it short.

        At abort the worker is about to exit and must not hang on a statement (one stuck
        behind a lock, say): it is cancelled, and a message it might have claimed in that
        instant comes back when its lease ends.
        """
        claim = asyncio.ensure_future(
            self.bus.lease(
                self.spec.queue,
                self.spec.consumer,
                limit=1,
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

    async def _process(self, message: Message, abort: asyncio.Event) -> None:
        extra = self._extra(message)
        heartbeat = asyncio.create_task(_keep_leased(self.bus, self._config, message))
        thread: threading.Thread | None = None
        if self.spec.is_async:
            call: asyncio.Future[Any] = asyncio.ensure_future(self.spec.fn(message))
        else:
            call, thread = _in_thread(self.spec.fn, message, self.spec.name)
        aborted = asyncio.ensure_future(abort.wait())
        try:
            done, _ = await asyncio.wait(
                {call, aborted}, timeout=self.spec.timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            heartbeat.cancel()
            aborted.cancel()
        if call in done:
            # a handler that cancelled itself (CancelledError escaping it) failed its attempt
            error = (
                asyncio.CancelledError("the handler was cancelled")
                if call.cancelled()
                else call.exception()
            )
            if error is None:
                await self._finish(message, extra, "ack")
            else:
                await self._failed(message, extra, error)
            return
        call.cancel()
        if aborted in done:
            self.log.warning(
                "message %s given back at shutdown (its handler did not finish in time)",
                message.iid,
                extra=extra,
            )
            await self._finish(message, extra, "give back")
            return
        self.stats.timed_out += 1
        how = "cancelled" if self.spec.is_async else "its thread goes on, its result is ignored"
        self.log.error(
            "message %s timed out after %ss (%s)", message.iid, self.spec.timeout, how, extra=extra
        )
        await self._failed(message, extra, HandlerTimeout(f"handler exceeded {self.spec.timeout}s"))
        # The slot waits for the runaway thread before it claims again, so a handler never
        # has more than ``concurrency`` threads; ``abort`` (shutdown) stops the wait.
        while thread is not None and thread.is_alive() and not abort.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(abort.wait(), 0.05)

    async def _failed(self, message: Message, extra: dict[str, Any], error: BaseException) -> None:
        reason = f"{type(error).__name__}: {error}"
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
            await self._finish(message, extra, "retry", delay=delay)
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
        await self._finish(message, extra, "bury", reason=reason)

    async def _finish(
        self,
        message: Message,
        extra: dict[str, Any],
        how: str,
        *,
        delay: float = 0.0,
        reason: str = "",
    ) -> None:
        try:
            if how == "ack":
                await self.bus.ack(message)
                self.stats.done += 1
            elif how == "bury":
                await self.bus.bury(message, reason)
                self.stats.dead += 1
            else:
                await self.bus.nack(message, delay=delay)
                if how == "retry":
                    self.stats.retried += 1
                else:
                    self.stats.given_back += 1
        except StaleLease:
            self.stats.lost += 1
            self.log.warning("message %s: lease lost before %s", message.iid, how, extra=extra)
        except Exception as exc:
            if not is_transient(exc):
                raise
            self.stats.unreported += 1
            self.log.warning(
                "message %s: %s did not reach the database (%s); it comes back when its lease ends",
                message.iid,
                how,
                exc,
                extra=extra,
            )
