"""Run every handler of an app in one process: signals, graceful stop, health, one-shot drain."""

from __future__ import annotations

import asyncio
import importlib
import logging
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pgmbus.dsn import resolve_dsn
from pgmbus.handlers import Handlers, Pool, QueueHandler, StreamHandler, handler_name
from pgmbus.queues._bus_async import AsyncBus
from pgmbus.queues.loop import QueueLoop
from pgmbus.queues.reports import HandlerStats, Meter
from pgmbus.streams.worker import WorkerStats as StreamStats
from pgmbus.workers.health import serve_health
from pgmbus.workers.metrics import WorkerMetrics
from pgmbus.workers.stream_loop import AsyncStreamLoop, StreamLoop

log = logging.getLogger("pgmbus.worker")


@dataclass
class Report:
    """What each handler of a worker did, by handler name."""

    queues: dict[str, HandlerStats] = field(default_factory=dict)
    streams: dict[str, StreamStats] = field(default_factory=dict)

    def of(self, fn: Callable[..., Any]) -> HandlerStats | StreamStats:
        """The stats of the handler ``fn``; KeyError when it did not run."""
        name = handler_name(fn)
        found = self.queues.get(name) or self.streams.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def lines(self) -> list[str]:
        """One human line per handler."""
        out = [f"{name}: {stats.summary()}" for name, stats in self.queues.items()]
        out += [
            f"{name}: {s.handled} handled, {s.retried} retried, {s.dead} dead"
            for name, s in self.streams.items()
        ]
        return out


def load_target(spec: str) -> Any:
    """Import ``module:attribute`` (the current directory is importable)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected module:attribute, not {spec!r}")
    if "" not in sys.path:
        sys.path.insert(0, "")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def dsn_of(app: Handlers, dsn: str | None = None) -> str:
    """The DSN to run ``app`` on: ``dsn`` if given, else the app's (a bus's pool's) own."""
    if dsn is not None:
        return resolve_dsn(dsn)
    own = getattr(app, "dsn", None)
    if own is None and hasattr(app, "pool"):
        own = app.pool.conninfo
    return resolve_dsn(own)


def _check(app: Handlers) -> None:
    if not isinstance(app, Handlers):
        raise TypeError(f"{app!r} is not a Bus, AsyncBus or App (it declares no handlers)")
    if not app.queue_handlers and not app.stream_handlers:
        raise ValueError("the app declares no handlers")


def _bus(app: Handlers, dsn: str) -> AsyncBus:
    slots = sum(h.concurrency for h in app.queue_handlers)
    poll = min((h.poll_interval for h in app.queue_handlers), default=1.0)
    # per handler: one LISTENs, one claims, one acks, one extends; a failure's nack or bury
    # takes one per slot
    return AsyncBus(dsn, max_size=slots + 4 * len(app.queue_handlers) + 1, poll_interval=poll)


async def serve(
    app: Handlers,
    *,
    dsn: str | None = None,
    stop: asyncio.Event | None = None,
    grace: float = 30.0,
    health: tuple[str, int] | None = None,
    signals: bool = True,
    status_hook: Callable[[Callable[[], dict[str, bool]] | None], None] | None = None,
    metrics: WorkerMetrics | None = None,
    pool: Pool | None = None,
) -> Report:
    """Run every handler of ``app`` until ``stop`` is set (or SIGTERM/SIGINT arrives).

    Stopping ends claiming at once; the messages and batches in hand get ``grace`` seconds to
    finish, after which the queue messages still in hand are given back (nack, delivered again
    at once to another worker) and their handlers' results ignored. A second signal skips the
    grace period.

    Parameters
    ----------
    app:
        A ``Bus``, ``AsyncBus`` or :class:`~pgmbus.handlers.App` with declared handlers.
    dsn:
        Overrides the app's database.
    stop:
        Set it to stop (default: a new event, set by the signals).
    grace:
        Seconds the work in hand may take after a stop.
    health:
        ``(host, port)`` of an HTTP health endpoint: 200 while every loop runs, else 503;
        its ``/metrics`` gives the handlers' Prometheus metrics.
    signals:
        Install SIGTERM/SIGINT handlers (only in the main thread).
    status_hook:
        Called with the function that tells which loops are up once they started, and with
        None when the run ends: a caller that runs several of these (the placement-following
        worker) serves one health endpoint over all of them.
    metrics:
        Where the handlers' calls are counted (default: a new one when ``health`` is given,
        else none); a caller that runs several of these serves one over all of them.
    pool:
        Run every plain ``def`` queue handler in this pool, ``"thread"`` or ``"process"``
        (None: each as declared).

    Raises
    ------
    Exception
        The error of a loop that died of something else than a lost database (a queue,
        consumer or group that does not exist; a bug), after the others stopped gracefully.
    """
    _check(app)
    url = dsn_of(app, dsn)
    stop = stop or asyncio.Event()
    abort = asyncio.Event()
    loop = asyncio.get_running_loop()
    if signals:

        def on_signal() -> None:
            if stop.is_set():
                log.warning("second signal: giving back the work in hand now")
                abort.set()
            else:
                log.info("signal received: stop claiming, finish the work in hand")
                stop.set()

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal)
    report = Report()
    if metrics is None and health is not None:
        metrics = WorkerMetrics()

    def meter_of(spec: StreamHandler) -> Meter | None:
        return None if metrics is None else metrics.stream(spec)

    stream_stop = threading.Event()
    streams = [
        StreamLoop(url, spec, meter_of(spec)) for spec in app.stream_handlers if not spec.is_async
    ]
    astreams = [
        AsyncStreamLoop(url, spec, meter_of(spec)) for spec in app.stream_handlers if spec.is_async
    ]
    server: asyncio.Server | None = None
    bus = _bus(app, url)
    try:
        async with bus:
            queues = [
                QueueLoop(bus, spec, meter=None if metrics is None else metrics.queue(spec))
                for spec in _pooled(app.queue_handlers, pool)
            ]
            tasks = [asyncio.create_task(q.run(stop, abort), name=q.spec.name) for q in queues]
            atasks = [asyncio.create_task(a.run(stop), name=a.spec.name) for a in astreams]
            fatal: list[BaseException] = []

            def on_fatal(exc: BaseException) -> None:  # from a stream thread
                fatal.append(exc)
                loop.call_soon_threadsafe(stop.set)

            threads = [t for s in streams for t in s.start(stream_stop, on_fatal)]

            def status() -> dict[str, bool]:
                if stop.is_set():
                    return {}
                pairs = zip(queues, tasks, strict=True)
                up = {q.spec.name: q.healthy and not t.done() for q, t in pairs}
                up |= {s.spec.name: s.healthy for s in streams}
                up |= {
                    a.spec.name: a.healthy and not t.done()
                    for a, t in zip(astreams, atasks, strict=True)
                }
                if threads:
                    up["stream threads"] = all(t.is_alive() for t in threads)
                return up

            if status_hook is not None:
                status_hook(status)
            if health is not None:
                server = await serve_health(*health, status, metrics)
                log.info("health endpoint on http://%s:%s/", *health)
            log.info(
                "worker started: %s queue handler(s), %s stream handler(s)",
                len(queues),
                len(streams) + len(astreams),
            )
            await _wait_for_stop(stop, tasks + atasks)
            stream_stop.set()  # the health endpoint answers 503 from now on, until exit
            done_in_time = await _wait_all(tasks + atasks, threads, grace)
            if not done_in_time:
                log.warning("grace period of %ss over: giving back the work in hand", grace)
            abort.set()
            for task in atasks:  # a batch cut here is rolled back: read again, exactly once
                task.cancel()
            await asyncio.gather(*tasks, *atasks, return_exceptions=True)
            for task in tasks + atasks:
                if not task.cancelled() and (error := task.exception()) is not None:
                    log.error("handler loop %s failed", task.get_name(), exc_info=error)
                    fatal.append(error)
            report.queues = {q.spec.name: q.stats for q in queues}
            if fatal:  # after the graceful stop of the others: a misconfiguration or a bug
                raise fatal[0]
    finally:
        if status_hook is not None:
            status_hook(None)
        stream_stop.set()
        if server is not None:
            server.close()
        if signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
    report.streams = {s.spec.name: s.stats for s in streams}
    report.streams |= {a.spec.name: a.stats for a in astreams}
    return report


def _pooled(specs: list[QueueHandler], pool: Pool | None) -> list[QueueHandler]:
    """The queue handlers, plain ``def`` ones moved to ``pool`` when one is given."""
    if pool is None:
        return specs
    return [spec if spec.is_async else replace(spec, pool=pool) for spec in specs]


async def _wait_for_stop(stop: asyncio.Event, tasks: list[asyncio.Task[None]]) -> None:
    """Return when ``stop`` is set; a loop that dies (a missing queue, a bug; not a lost
    database, which loops wait out) stops all, and :func:`serve` raises its error."""
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({stopping, *tasks}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if not stop.is_set():
        log.error("a handler loop ended by itself: stopping the worker")
        stop.set()


async def _wait_all(
    tasks: list[asyncio.Task[None]], threads: list[threading.Thread], grace: float
) -> bool:
    """Wait up to ``grace`` seconds for the loops; True when all ended in time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    if tasks:
        await asyncio.wait(tasks, timeout=grace)
    for t in threads:
        await asyncio.to_thread(t.join, max(0.0, deadline - loop.time()))
    return all(t.done() for t in tasks) and not any(t.is_alive() for t in threads)


def run(app: Handlers, **options: Any) -> Report:
    """Blocking :func:`serve` (its options): run until SIGTERM/SIGINT, return the report."""
    return asyncio.run(serve(app, **options))


async def adrain(app: Handlers, *, dsn: str | None = None) -> Report:
    """Handle what is due now for every handler of ``app``, then return (no waiting, no signals).

    Each queue handler's slots claim until their queue has no message due; each stream
    handler reads batches (and due retries) until none is left. Messages retried with a delay
    are left for later. Meant for scripts, tests and cron-style runs.
    """
    _check(app)
    url = dsn_of(app, dsn)
    stop, abort = asyncio.Event(), asyncio.Event()
    report = Report()
    async with _bus(app, url) as bus:
        queues = [QueueLoop(bus, spec) for spec in app.queue_handlers]
        await asyncio.gather(*(q.run(stop, abort, drain=True) for q in queues))
        report.queues = {q.spec.name: q.stats for q in queues}
    streams = [StreamLoop(url, spec) for spec in app.stream_handlers if not spec.is_async]
    for s in streams:
        await asyncio.to_thread(s.drain)
    astreams = [AsyncStreamLoop(url, spec) for spec in app.stream_handlers if spec.is_async]
    for a in astreams:
        await a.drain()
    report.streams = {s.spec.name: s.stats for s in streams}
    report.streams |= {a.spec.name: a.stats for a in astreams}
    return report


def drain(app: Handlers, *, dsn: str | None = None) -> Report:
    """Blocking :func:`adrain`."""
    return asyncio.run(adrain(app, dsn=dsn))


__all__ = ["Report", "adrain", "drain", "dsn_of", "load_target", "run", "serve"]
