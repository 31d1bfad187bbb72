"""The queue worker: lease messages, call a handler, ack, retry with backoff, bury after a limit."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import importlib
import inspect
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pgmbus.errors import StaleLease
from pgmbus.queues._bus_async import AsyncBus
from pgmbus.queues.model import Message
from pgmbus.reconnect import Backoff, is_transient

log = logging.getLogger("pgmbus.worker")

Handler = Callable[[Message], Awaitable[None] | None]


@dataclass(frozen=True)
class WorkerConfig:
    """How a worker consumes.

    Attributes
    ----------
    queue, consumer:
        Where messages come from.
    concurrency:
        Messages handled at once (one asyncio task each; sync handlers run in threads).
    lease:
        Seconds a claimed message stays invisible to others. The worker extends the lease every
        half lease while the handler runs, so a message goes back to the queue only when its
        worker stops (crash, kill), after at most one lease.
    max_attempts:
        Deliveries before a failing message is buried in the dmq with the exception as reason.
    backoff_base, backoff_max:
        A failed message is retried after ``min(backoff_max, backoff_base * 2 ** (attempts-1))``
        seconds.
    poll_interval:
        Longest sleep between looks at an idle queue (NOTIFY wakes the worker sooner).
    """

    queue: str
    consumer: str = "default"
    concurrency: int = 1
    lease: float = 60.0
    max_attempts: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 300.0
    poll_interval: float = 1.0

    def backoff(self, attempts: int) -> float:
        """Seconds to wait before the next delivery after ``attempts`` failed ones."""
        return float(min(self.backoff_max, self.backoff_base * 2 ** max(attempts - 1, 0)))


ERRORS_KEPT = 100


@dataclass
class WorkerStats:
    """What a worker did.

    ``failed`` counts handler failures; ``errors`` keeps only the last ``ERRORS_KEPT`` of
    their reasons, so a long-running worker's memory stays flat. ``unfinished`` counts
    messages whose ack, nack or bury could not reach the database (they come back when their
    lease ends); ``reconnects`` counts database errors the worker waited out.
    """

    done: int = 0
    retried: int = 0
    dead: int = 0
    lost: int = 0
    failed: int = 0
    unfinished: int = 0
    reconnects: int = 0
    errors: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=ERRORS_KEPT)
    )


def load_handler(spec: str) -> Handler:
    """Import ``module:function`` (the current directory is importable)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"handler must be given as module:function, not {spec!r}")
    if "" not in sys.path:
        sys.path.insert(0, "")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"{spec} is not callable")
    handler: Handler = target
    return handler


async def _call(handler: Handler, message: Message) -> None:
    if inspect.iscoroutinefunction(handler):
        await handler(message)
        return
    result = await asyncio.to_thread(handler, message)
    if inspect.isawaitable(result):
        await result


async def _keep_leased(bus: AsyncBus, config: WorkerConfig, message: Message) -> None:
    """Extend the message's lease every half lease while its handler runs."""
    while True:
        await asyncio.sleep(config.lease / 2)
        try:
            await bus.extend(message, config.lease)
        except StaleLease:
            return
        except Exception as exc:
            if not is_transient(exc):
                log.exception("extending the lease of message %s failed", message.iid)
                return
            log.warning("extending the lease of message %s failed, retrying: %s", message.iid, exc)


async def _process(
    bus: AsyncBus, handler: Handler, config: WorkerConfig, message: Message, stats: WorkerStats
) -> None:
    heartbeat = asyncio.create_task(_keep_leased(bus, config, message))
    try:
        await _call(handler, message)
    except Exception as exc:
        heartbeat.cancel()
        reason = f"{type(exc).__name__}: {exc}"
        stats.failed += 1
        stats.errors.append(reason)
        try:
            if message.attempts >= config.max_attempts:
                await bus.bury(message, reason)
                stats.dead += 1
                log.warning(
                    "message %s buried after %s attempts: %s", message.iid, message.attempts, reason
                )
            else:
                delay = config.backoff(message.attempts)
                await bus.nack(message, delay=delay)
                stats.retried += 1
                log.info("message %s failed (%s); retry in %.1fs", message.iid, reason, delay)
        except StaleLease:
            stats.lost += 1
        except Exception as finish_exc:
            _unfinished(message, "nack", finish_exc, stats)
        return
    finally:
        heartbeat.cancel()
    try:
        await bus.ack(message)
        stats.done += 1
    except StaleLease:
        stats.lost += 1
        log.warning("message %s: lease lost before ack", message.iid)
    except Exception as exc:
        _unfinished(message, "ack", exc, stats)


def _unfinished(message: Message, what: str, exc: Exception, stats: WorkerStats) -> None:
    """An ack/nack/bury that did not reach the database: the message comes back when its
    lease ends (at least once). Anything but a transient database error is a bug: raise it."""
    if not is_transient(exc):
        raise exc
    stats.unfinished += 1
    log.warning(
        "message %s: %s failed (%s); it is delivered again when its lease ends",
        message.iid,
        what,
        exc,
    )


async def run_worker(
    bus: AsyncBus, handler: Handler, config: WorkerConfig, stop: asyncio.Event
) -> WorkerStats:
    """Handle messages until ``stop`` is set; the messages in hand are finished first."""
    if config.concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    stats = WorkerStats()

    async def slot() -> None:
        backoff = Backoff(cap=min(5.0, max(config.poll_interval, 0.1) * 5))
        while not stop.is_set():
            try:
                messages = await bus.lease(
                    config.queue,
                    config.consumer,
                    limit=1,
                    lease=config.lease,
                    max_attempts=config.max_attempts,
                    wait=config.poll_interval,
                )
                for message in messages:
                    await _process(bus, handler, config, message, stats)
            except Exception as exc:
                if not is_transient(exc):
                    log.exception("worker on %s/%s stops", config.queue, config.consumer)
                    raise
                stats.reconnects += 1
                delay = backoff.next()
                log.warning(
                    "worker on %s/%s: database error, retrying in %.2fs: %s",
                    config.queue,
                    config.consumer,
                    delay,
                    exc,
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
                continue
            backoff.reset()

    await asyncio.gather(*(slot() for _ in range(config.concurrency)))
    return stats


async def serve(dsn: str | None, handler: Handler, config: WorkerConfig) -> WorkerStats:
    """Run a worker until SIGTERM or SIGINT; returns its stats after a graceful stop."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    bus = AsyncBus(dsn, max_size=3 * config.concurrency + 1, poll_interval=config.poll_interval)
    async with bus:
        return await run_worker(bus, handler, config, stop)
