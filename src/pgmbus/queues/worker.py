"""One function on one queue: the settings of ``pgmbus worker module:function`` and its run.

The loop itself is :class:`pgmbus.queues.loop.QueueLoop`, the one that runs declared handlers.
"""

from __future__ import annotations

import asyncio
import importlib
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pgmbus.handlers import DEFAULT_CONCURRENCY, POOLS, Pool, QueueHandler, RetryPolicy
from pgmbus.queues._bus_async import AsyncBus
from pgmbus.queues.loop import QueueLoop
from pgmbus.queues.model import Message
from pgmbus.queues.reports import ERRORS_KEPT, HandlerStats

Handler = Callable[[Message], Awaitable[None] | None]


@dataclass(frozen=True)
class WorkerConfig:
    """How a worker consumes.

    Attributes
    ----------
    queue, consumer:
        Where messages come from.
    concurrency:
        Messages handled at once (one asyncio task each; plain ``def`` handlers run in that
        many reused threads).
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
    timeout:
        Seconds an attempt may take (None: no limit), as the handler declaration's.
    pool:
        ``"thread"`` or ``"process"``: where a plain ``def`` handler runs (docs/workers.md).
    """

    queue: str
    consumer: str = "default"
    concurrency: int = DEFAULT_CONCURRENCY
    lease: float = 60.0
    max_attempts: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 300.0
    poll_interval: float = 1.0
    timeout: float | None = None
    pool: Pool = "thread"

    def __post_init__(self) -> None:
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("timeout must be > 0")
        if self.pool not in POOLS:
            raise ValueError(f"pool must be one of {', '.join(POOLS)}, not {self.pool!r}")

    def retry(self) -> RetryPolicy:
        """The retry policy these settings make (no jitter: the schedule above)."""
        return RetryPolicy(
            max_attempts=self.max_attempts,
            backoff=self.backoff_base,
            backoff_max=self.backoff_max,
            jitter=0.0,
        )

    def backoff(self, attempts: int) -> float:
        """Seconds to wait before the next delivery after ``attempts`` failed ones."""
        return self.retry().delay(attempts)

    def spec(self, handler: Handler) -> QueueHandler:
        """The handler declaration that runs ``handler`` with these settings."""
        return QueueHandler(
            fn=handler,
            queue=self.queue,
            consumer=self.consumer,
            retry=self.retry(),
            concurrency=self.concurrency,
            lease=self.lease,
            poll_interval=self.poll_interval,
            timeout=self.timeout,
            pool=self.pool,
        )


WorkerStats = HandlerStats
"""What a worker did (see :class:`~pgmbus.queues.reports.HandlerStats`)."""


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


async def run_worker(
    bus: AsyncBus, handler: Handler, config: WorkerConfig, stop: asyncio.Event
) -> WorkerStats:
    """Handle messages until ``stop`` is set; the messages in hand are finished first."""
    if config.concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    loop = QueueLoop(bus, config.spec(handler))
    await loop.run(stop, asyncio.Event())
    return loop.stats


async def serve(dsn: str | None, handler: Handler, config: WorkerConfig) -> WorkerStats:
    """Run a worker until SIGTERM or SIGINT; returns its stats after a graceful stop."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    bus = AsyncBus(dsn, max_size=config.concurrency + 4, poll_interval=config.poll_interval)
    async with bus:
        return await run_worker(bus, handler, config, stop)


__all__ = [
    "ERRORS_KEPT",
    "Handler",
    "WorkerConfig",
    "WorkerStats",
    "load_handler",
    "run_worker",
    "serve",
]
