"""The queue worker: lease messages, call a handler, ack, retry with backoff, bury after a limit."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pgmbus.errors import StaleLease
from pgmbus.queues._async_bus import AsyncBus
from pgmbus.queues.model import Message

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


@dataclass
class WorkerStats:
    """What a worker did."""

    done: int = 0
    retried: int = 0
    dead: int = 0
    lost: int = 0
    errors: list[str] = field(default_factory=list)


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


async def _process(
    bus: AsyncBus, handler: Handler, config: WorkerConfig, message: Message, stats: WorkerStats
) -> None:
    heartbeat = asyncio.create_task(_keep_leased(bus, config, message))
    try:
        await _call(handler, message)
    except Exception as exc:
        heartbeat.cancel()
        reason = f"{type(exc).__name__}: {exc}"
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
        return
    finally:
        heartbeat.cancel()
    try:
        await bus.ack(message)
        stats.done += 1
    except StaleLease:
        stats.lost += 1
        log.warning("message %s: lease lost before ack", message.iid)


async def run_worker(
    bus: AsyncBus, handler: Handler, config: WorkerConfig, stop: asyncio.Event
) -> WorkerStats:
    """Handle messages until ``stop`` is set; the messages in hand are finished first."""
    if config.concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    stats = WorkerStats()

    async def slot() -> None:
        while not stop.is_set():
            messages = await bus.lease(
                config.queue,
                config.consumer,
                amount=1,
                lease=config.lease,
                max_attempts=config.max_attempts,
                timeout=config.poll_interval,
            )
            for message in messages:
                await _process(bus, handler, config, message, stats)

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
