"""Run an app's handlers on the servers a placement map gives, following the map as it changes."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from pgmbus.data.scaleout import WORKERS_PLACED as _Q
from pgmbus.errors import ConfigurationError, PgmbusError, translating
from pgmbus.handlers import App, Handlers, QueueHandler, StreamHandler
from pgmbus.scaleout.placement import Cluster
from pgmbus.workers.health import serve_health
from pgmbus.workers.metrics import WorkerMetrics
from pgmbus.workers.runtime import Report, serve

log = logging.getLogger("pgmbus.worker")

Plan = dict[str, tuple[tuple[int, ...], tuple[int, ...]]]
"""Per server DSN: the indexes of the queue handlers and of the stream handlers it runs."""


def _reads(dsn: str, group: str, topics: set[str]) -> bool:
    """True when ``group`` exists on ``dsn`` and reads one of ``topics`` (or every topic)."""
    with translating(), psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute(_Q["group_topics"], {"group": group}).fetchone()
    return row is not None and (row[0] is None or bool(topics & {str(t) for t in row[0]}))


def plan(app: Handlers, cluster: Cluster) -> Plan:
    """Which handlers run against which server, as the map says now.

    A queue handler reads every server of :meth:`Cluster.dsns_to_read` (old and new during a
    move). A stream handler reads every server of every placed topic where its group exists
    and reads that topic, except the servers held back during a change of the topic's servers
    (:meth:`pgmbus.scaleout.Placement.held`: a key's old events first).

    Raises
    ------
    NotFound
        A queue handler's queue is not in the map.
    """
    queues: dict[str, list[int]] = {}
    streams: dict[str, list[int]] = {}
    for i, qspec in enumerate(app.queue_handlers):
        for dsn in cluster.dsns_to_read(qspec.queue):
            queues.setdefault(dsn, []).append(i)
    topics = [p for p in cluster.placements() if p.kind == "topic"]
    for i, sspec in enumerate(app.stream_handlers):
        for dsn in dict.fromkeys(d for p in topics for d in cluster.topic_dsns_to_read(p.name)):
            placed_here = {p.name for p in topics if dsn in cluster.topic_dsns_to_read(p.name)}
            if _reads(dsn, sspec.group, placed_here):
                streams.setdefault(dsn, []).append(i)
    return {
        dsn: (tuple(queues.get(dsn, ())), tuple(streams.get(dsn, ())))
        for dsn in dict.fromkeys([*queues, *streams])
    }


def _sub_app(app: Handlers, dsn: str, picks: tuple[tuple[int, ...], tuple[int, ...]]) -> App:
    sub = App(dsn)
    q: list[QueueHandler] = [app.queue_handlers[i] for i in picks[0]]
    s: list[StreamHandler] = [app.stream_handlers[i] for i in picks[1]]
    sub.queue_handlers.extend(q)
    sub.stream_handlers.extend(s)
    return sub


@dataclass
class _Running:
    picks: tuple[tuple[int, ...], tuple[int, ...]]
    stop: asyncio.Event
    task: asyncio.Task[Report]


def where(dsn: str) -> str:
    """``host:port/dbname`` of a DSN: names a server in the health answer without its password."""
    info = conninfo_to_dict(dsn)
    host = info.get("host") or info.get("hostaddr") or "localhost"
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or ''}"


class _Health:
    """The loops of every server's run, as one health answer (``handler @ host:port/db``)."""

    def __init__(self) -> None:
        self.runs: dict[str, Callable[[], dict[str, bool]] | None] = {}
        self.stopping = False

    def hook(self, dsn: str) -> Callable[[Callable[[], dict[str, bool]] | None], None]:
        def register(status: Callable[[], dict[str, bool]] | None) -> None:
            self.runs[dsn] = status

        return register

    def status(self) -> dict[str, bool]:
        if self.stopping:
            return {}
        up: dict[str, bool] = {}
        for dsn, status in self.runs.items():
            loops = status() if status is not None else {}
            if not loops:  # starting, or its run ended by itself
                up[f"@ {where(dsn)}"] = False
            up |= {f"{name} @ {where(dsn)}": ok for name, ok in loops.items()}
        return up


def _merge(into: Report, dsn: str, part: Report) -> None:
    """Add ``part`` (the run on ``dsn``) to ``into``, keyed ``handler @ dsn``."""
    into.queues |= {f"{name} @ {dsn}": s for name, s in part.queues.items()}
    into.streams |= {f"{name} @ {dsn}": s for name, s in part.streams.items()}


async def serve_placed(
    app: Handlers,
    *,
    home: str,
    refresh: float = 5.0,
    stop: asyncio.Event | None = None,
    grace: float = 30.0,
    signals: bool = True,
    health: tuple[str, int] | None = None,
) -> Report:
    """Run every handler of ``app`` on the servers the placement map on ``home`` gives.

    The map is read again every ``refresh`` seconds; a server that now holds (or no longer
    holds) a handler's queue or topic gets (or loses) a worker for it without a restart. A
    server whose set of handlers changes has its run stopped gracefully and started again.

    Parameters
    ----------
    app:
        A ``Bus``, ``AsyncBus`` or :class:`~pgmbus.handlers.App` with declared handlers (its
        own DSN is not used: the map gives the servers).
    home:
        The database holding the map (see :class:`pgmbus.scaleout.Cluster`).
    refresh:
        Seconds between two reads of the map.
    stop, grace, signals:
        As for :func:`pgmbus.workers.serve`.
    health:
        ``(host, port)`` of one HTTP health endpoint over every server's loops (keyed
        ``handler @ host:port/dbname``): 200 while all run, else 503. A map that cannot be read
        again does not make it fail (the worker goes on with the last map and logs it).

    Returns
    -------
    Report
        The stats of each handler on each server, keyed ``"handler @ dsn"``.

    Raises
    ------
    NotFound
        A queue handler's queue is not in the map (at start).
    ConfigurationError
        The home database cannot be reached at start (later failures keep the last map).
    """
    if not app.queue_handlers and not app.stream_handlers:
        raise ValueError("the app declares no handlers")
    cluster = Cluster(home, refresh=refresh)
    try:
        cluster.reload()
    except psycopg.Error as exc:  # not translated: an unreachable home
        raise ConfigurationError(f"placement home {cluster.home!r} is unreachable: {exc}") from exc
    current = await asyncio.to_thread(plan, app, cluster)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    if signals:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
    report = Report()
    running: dict[str, _Running] = {}
    checks = _Health()
    metrics = None if health is None else WorkerMetrics()  # one registry over every run
    server = None if health is None else await serve_health(*health, checks.status, metrics)

    async def end(dsn: str) -> None:
        run = running.pop(dsn)
        run.stop.set()
        try:
            _merge(report, dsn, await run.task)
        finally:
            checks.runs.pop(dsn, None)

    try:
        while True:
            for dsn in [d for d in running if running[d].picks != current.get(d)]:
                log.info("placement changed: stopping the handlers on %s", dsn)
                await end(dsn)
            for dsn, picks in current.items():
                if dsn not in running and (picks[0] or picks[1]):
                    log.info("placement: running %s handler(s) on %s", sum(map(len, picks)), dsn)
                    event = asyncio.Event()
                    sub = _sub_app(app, dsn, picks)
                    checks.runs[dsn] = None
                    task = asyncio.create_task(
                        serve(
                            sub,
                            dsn=dsn,
                            stop=event,
                            grace=grace,
                            signals=False,
                            status_hook=checks.hook(dsn),
                            metrics=metrics,
                        )
                    )
                    running[dsn] = _Running(picks, event, task)
            tasks = [r.task for r in running.values()]
            waiter = asyncio.ensure_future(stop.wait())
            await asyncio.wait([waiter, *tasks], timeout=refresh, return_when="FIRST_COMPLETED")
            waiter.cancel()
            if stop.is_set() or any(t.done() for t in tasks):
                break
            try:
                cluster.reload()
                current = await asyncio.to_thread(plan, app, cluster)
            except (PgmbusError, psycopg.Error) as exc:
                log.warning("placement map not read again (%s): keeping the last one", exc)
    finally:
        checks.stopping = True  # 503 from now on, until exit
        for dsn in list(running):
            running[dsn].stop.set()
        errors: list[BaseException] = []
        for dsn in list(running):
            try:
                await end(dsn)
            except Exception as exc:  # a loop that died: raised after the others stopped
                errors.append(exc)
        if signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
        cluster.close()
        if server is not None:
            server.close()
    if errors:
        raise errors[0]
    return report


def run_placed(app: Handlers, **options: Any) -> Report:
    """Blocking :func:`serve_placed` (its options)."""
    return asyncio.run(serve_placed(app, **options))


__all__ = ["plan", "run_placed", "serve_placed"]
