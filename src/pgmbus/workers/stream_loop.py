"""One stream handler on the stream worker: a thread per slot (plain ``def``) or a task (async).

Both run the one consumer loop of ``pgmbus.streams.worker_async`` (its generated blocking twin
for a plain handler): releases, batches, retries, wake-ups, maintenance and reconnects are
the same whichever kind of function handles the events.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from pgmbus.handlers import StreamHandler
from pgmbus.queues.reports import Meter
from pgmbus.reconnect import Backoff
from pgmbus.streams.worker import StreamWorker
from pgmbus.streams.worker_async import AsyncStreamWorker
from pgmbus.streams.worker_parts import WorkerStats


def _slots(spec: StreamHandler) -> tuple[int | None, ...]:
    return spec.slots if spec.slots is not None else (None,)


def _logger(spec: StreamHandler) -> logging.Logger:
    return logging.getLogger(f"pgmbus.handler.{spec.name}")


def _metered(spec: StreamHandler, meter: Meter | None) -> Callable[..., Any]:
    """``spec.fn``, telling ``meter`` about each call (a raise is a failure: the event goes to
    the group's retries)."""
    fn = spec.fn
    if meter is None:
        return fn
    if spec.is_async:

        @functools.wraps(fn)
        async def timed_async(conn: Any, event: Any) -> Any:
            meter.started()
            started, failed = time.perf_counter(), True
            try:
                result = await fn(conn, event)
                failed = False
                return result
            finally:
                meter.ended(time.perf_counter() - started, failed)

        return timed_async

    @functools.wraps(fn)
    def timed(conn: Any, event: Any) -> Any:
        meter.started()
        started, failed = time.perf_counter(), True
        try:
            result = fn(conn, event)
            failed = False
            return result
        finally:
            meter.ended(time.perf_counter() - started, failed)

    return timed


class _CountedStats(WorkerStats):
    """A stream worker's stats that also tell a meter of each retry and dead letter (the
    worker counts them inside its batch; this is where they can be seen from outside)."""

    def __init__(self, meter: Meter) -> None:
        super().__init__()
        self._meter = meter

    def __setattr__(self, name: str, value: Any) -> None:
        before = getattr(self, name, 0)
        super().__setattr__(name, value)
        if name == "retried" and value > before:
            self._meter.retried()
        elif name == "dead" and value > before:
            self._meter.buried()


def _count(workers: Sequence[StreamWorker | AsyncStreamWorker], meter: Meter | None) -> None:
    if meter is not None:
        for w in workers:
            w.stats = _CountedStats(meter)


def _total(workers: Sequence[StreamWorker | AsyncStreamWorker]) -> WorkerStats:
    total = WorkerStats()
    for w in workers:
        total.batches += w.stats.batches
        total.handled += w.stats.handled
        total.retried += w.stats.retried
        total.dead += w.stats.dead
        total.maintained += w.stats.maintained
        total.reconnects += w.stats.reconnects
        total.errors.extend(w.stats.errors)
    return total


class StreamLoop:
    """Run a plain ``def`` :class:`~pgmbus.handlers.StreamHandler`: a ``StreamWorker`` per slot.

    Each slot (or the one unslotted loop) runs in a daemon thread; a batch in progress when
    ``stop`` is set finishes (its transaction commits) before the thread returns. A batch cut
    short by the process's exit is rolled back by the server, so each event's database effects
    still happen exactly once.
    """

    def __init__(self, dsn: str, spec: StreamHandler, meter: Meter | None = None) -> None:
        self.dsn = dsn
        self.spec = spec
        self.log = _logger(spec)
        fn = _metered(spec, meter)
        self.workers = [
            StreamWorker(
                dsn,
                spec.group,
                fn,
                slot=slot,
                batch=spec.max_events,
                subscriptions=spec.subscriptions,
                logger=self.log,
                log_fields={"handler": spec.name},
            )
            for slot in _slots(spec)
        ]
        _count(self.workers, meter)

    @property
    def stats(self) -> WorkerStats:
        """The workers' stats added up."""
        return _total(self.workers)

    @property
    def healthy(self) -> bool:
        """False while a slot's worker has lost the database (until it reads again)."""
        return not any(w.failing for w in self.workers)

    def start(
        self, stop: threading.Event, on_fatal: Callable[[BaseException], None]
    ) -> list[threading.Thread]:
        """Start one thread per worker; they return once ``stop`` is set.

        A database that cannot be reached costs a reconnect with backoff (inside the worker);
        any other error (a missing group, a bug) ends the thread and is handed to ``on_fatal``.
        """
        threads = [
            threading.Thread(
                target=self._run,
                args=(worker, stop, on_fatal),
                name=f"pgmbus:{self.spec.name}:{i}",
                daemon=True,
            )
            for i, worker in enumerate(self.workers)
        ]
        for t in threads:
            t.start()
        return threads

    def _run(
        self,
        worker: StreamWorker,
        stop: threading.Event,
        on_fatal: Callable[[BaseException], None],
    ) -> None:
        try:
            worker.run(stop=stop.is_set, idle_wait=self.spec.idle_wait, backoff=Backoff())
        except Exception as exc:  # the worker waits out transient errors itself
            worker.failing = True
            self.log.exception("stream loop of group %s failed", self.spec.group)
            on_fatal(exc)

    def drain(self) -> None:
        """Handle every event due now (batches and retries) in the calling thread, then return."""
        for worker in self.workers:
            worker.drain()


class AsyncStreamLoop:
    """Run an ``async def`` :class:`~pgmbus.handlers.StreamHandler` in the worker's event loop.

    The same contract as :class:`StreamLoop`: ``await fn(conn, event)`` runs inside the
    batch's transaction on ``conn`` (an ``AsyncConnection``), each event in a savepoint, so its
    database writes commit with the group's cursor (exactly once); an event whose handler raises
    goes to the group's retries (then dead letters) and the batch goes on. A batch in progress
    when ``stop`` is set finishes.
    """

    def __init__(self, dsn: str, spec: StreamHandler, meter: Meter | None = None) -> None:
        self.dsn = dsn
        self.spec = spec
        self.log = _logger(spec)
        fn = _metered(spec, meter)
        self.workers = [
            AsyncStreamWorker(
                dsn,
                spec.group,
                fn,
                slot=slot,
                batch=spec.max_events,
                subscriptions=spec.subscriptions,
                logger=self.log,
                log_fields={"handler": spec.name},
            )
            for slot in _slots(spec)
        ]
        _count(self.workers, meter)

    @property
    def stats(self) -> WorkerStats:
        """The workers' stats added up."""
        return _total(self.workers)

    @property
    def healthy(self) -> bool:
        """False while a slot's worker has lost the database (until it reads again)."""
        return not any(w.failing for w in self.workers)

    async def run(self, stop: asyncio.Event) -> None:
        """Consume every slot until ``stop`` is set; a lost database is waited out."""
        await asyncio.gather(
            *(w.run(stop=stop.is_set, idle_wait=self.spec.idle_wait) for w in self.workers)
        )

    async def drain(self) -> None:
        """Handle every event due now (batches and retries), then return."""
        for worker in self.workers:
            await worker.drain()
