"""The application factory of ``pgmbus serve``: every engine's router, /metrics, docs, UI."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.security import HTTPAuthorizationCredentials
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool

from pgmbus import __version__
from pgmbus.http import (
    dashboard,
    docs,
    errors,
    messages,
    ops,
    queue_ops,
    queues,
    series,
    stream_around,
    streams,
    timers,
)
from pgmbus.http.auth import principal
from pgmbus.http.config import ServiceConfig
from pgmbus.http.limits import BodyLimit
from pgmbus.http.metrics import ListenerCollector, afetch_snapshot, registry_for
from pgmbus.http.promseries import Prometheus
from pgmbus.http.samples import Samples, keep_sampling
from pgmbus.http.state import AppState, query
from pgmbus.timers import store_async as store
from pgmbus.timers.dispatcher import Dispatcher
from pgmbus.timers.supervised import keep_dispatching

DESCRIPTION = """\
pgmbus over HTTP: queues, streams, timers (scheduled HTTP callbacks), operations reads, and
`/metrics`. Every call but `/healthz` and `/metrics` needs a bearer API key
(`pgmbus timers add-client`); scopes (`pgmbus key scopes`) say which queues, topics and groups
a key may read, consume, post to or manage. Every 4xx answer is `{"error", "message"}`.
"""


def create_app(config: ServiceConfig) -> FastAPI:
    """Build the HTTP application for ``config`` (pools open at startup)."""
    state = AppState(config)
    running: list[asyncio.AbstractEventLoop] = []  # the loop serving the app, once started
    samples = Samples(config.sample_every_s, config.sample_window_s)
    prometheus = (
        None
        if config.prometheus_url is None
        else Prometheus(
            config.prometheus_url, config.prometheus_timeout_s, config.prometheus_rate_window_s
        )
    )

    async def sample() -> dict[str, Any]:
        rows = await state.rows(query("series_sample"), {"late_s": config.late_after_s})
        found: dict[str, Any] = rows[0]["sample"]
        return found

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        running[:] = [asyncio.get_running_loop()]
        await state.open()
        stop = asyncio.Event()
        sampling = asyncio.create_task(keep_sampling(samples, sample, stop))
        task: asyncio.Task[None] | None = None
        if config.run_dispatcher:
            task = asyncio.create_task(
                keep_dispatching(
                    lambda: Dispatcher(config.dsn, config.dispatcher, state.guard), stop
                )
            )
        try:
            yield
        finally:
            stop.set()
            if task is not None:
                await task
            await sampling
            if prometheus is not None:
                await prometheus.aclose()
            await state.close()

    app = FastAPI(
        title="pgmbus",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.pgmbus = state
    app.state.samples = samples
    app.state.prometheus = prometheus
    app.state.timers = state  # the name tests and tools used before the HTTP package
    errors.install(app)
    app.add_middleware(BodyLimit, max_bytes=config.max_body_bytes)

    async def take_snapshot(after_xid: int | None) -> dict[str, Any]:
        async with state.pool.connection() as conn:
            return await afetch_snapshot(
                conn,
                late_after_s=config.late_after_s,
                window_s=config.recent_window_s,
                after_xid=after_xid,
            )

    def snapshot(after_xid: int | None) -> dict[str, Any]:
        # the collector runs in the encoding thread; the query runs on the event loop, on the
        # service's one pool, while that thread waits for it
        return asyncio.run_coroutine_threadsafe(take_snapshot(after_xid), running[0]).result()

    # the hub's numbers are read on the event loop at each scrape (the hub is not locked);
    # the collector, run in a worker thread, shows the copy
    listener_stats = state.listeners.stats()
    registry = registry_for(snapshot, ListenerCollector(lambda: listener_stats))

    @app.get("/healthz", tags=["service"])
    async def healthz() -> dict[str, str]:
        """200 when the database answers."""
        async with state.pool.connection() as conn:
            await store.ping(conn)
        return {"status": "ok"}

    @app.get(
        "/metrics",
        tags=["service"],
        response_class=Response,
        responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text"}},
    )
    async def metrics(request: Request) -> Response:
        """Prometheus metrics from one SQL snapshot (docs/operations.md lists the series)."""
        if not config.metrics_public:
            credentials = request.headers.get("authorization", "")
            scheme, _, key = credentials.partition(" ")
            if scheme.lower() != "bearer" or not key:
                raise HTTPException(401, "missing bearer API key", {"WWW-Authenticate": "Bearer"})
            await principal(request, HTTPAuthorizationCredentials(scheme=scheme, credentials=key))
        listener_stats.update(state.listeners.stats())
        body = await run_in_threadpool(generate_latest, registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    app.include_router(timers.router)
    app.include_router(queues.router)
    app.include_router(queue_ops.router)
    app.include_router(messages.router)
    app.include_router(streams.router)
    app.include_router(stream_around.router)
    app.include_router(ops.router)
    app.include_router(series.router)
    errors.document(app)
    docs.install(app)
    dashboard.install(app)
    return app
