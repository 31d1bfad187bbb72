"""The timers HTTP API (FastAPI): callbacks and schedules per authenticated owner client.

``create_app`` builds the application; ``pgmbus serve`` runs it with uvicorn and, unless told
otherwise, a dispatcher in the same process. OpenAPI is served at ``/docs``. Every error answers
``{"error", "message"}`` (:mod:`pgmbus.timers.http_errors`). Before anything is stored, a
request's values are checked against their bounds (:mod:`pgmbus.timers.models`), its context
against ``max_context_bytes`` (413), its cron against never firing, and its URL against the
network guard (422 when the host is, or resolves to, a refused address; a host that does not
resolve now is accepted, and the dispatcher checks again before every call).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from psycopg_pool import AsyncConnectionPool

from pgmbus import __version__
from pgmbus.errors import InvalidArgument
from pgmbus.timers import cron, http_errors, store
from pgmbus.timers.batcher import CreateBatcher
from pgmbus.timers.dispatcher import Dispatcher, DispatcherConfig
from pgmbus.timers.models import (
    Callback,
    CallbackCreate,
    CallbackPage,
    CallbackUpdate,
    ErrorBody,
    History,
    Key,
    Schedule,
    ScheduleCreate,
    Status,
)
from pgmbus.timers.netguard import NetworkGuard, UnresolvableHost, networks_from_env

_AUTH_CACHE_S = 60.0
_MAX_ID = 2**63 - 1


@dataclass
class ServiceConfig:
    """Settings of ``pgmbus serve``."""

    dsn: str
    pool_size: int = 10
    batch_max_items: int = 200
    batch_max_wait_s: float = 0.05
    run_dispatcher: bool = True
    dispatcher: DispatcherConfig | None = None
    guard: NetworkGuard | None = None
    max_context_bytes: int = 65536
    """Largest ``context`` accepted, in bytes of its JSON text (413 beyond). The database's
    own limit is the setting ``timers.max_context_bytes`` (same default): raise both."""
    max_url_length: int = 4096
    """Longest ``url`` accepted, in bytes (422 beyond; database setting
    ``timers.max_url_length``)."""


class _State:
    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self.pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            config.dsn,
            min_size=2,
            max_size=config.pool_size,
            open=False,
            kwargs={"autocommit": False},
        )
        self.batcher = CreateBatcher(
            self.pool, max_items=config.batch_max_items, max_wait_s=config.batch_max_wait_s
        )
        self.auth: dict[str, tuple[int, float]] = {}
        self.guard = config.guard or NetworkGuard(networks_from_env())

    async def check_fields(self, url: str | None, context: dict[str, Any] | None) -> None:
        """Refuse a context over its size limit (413) or a URL that may not be called (422)."""
        if context is not None:
            size = len(json.dumps(context, ensure_ascii=False).encode())
            if size > self.config.max_context_bytes:
                raise HTTPException(
                    413,
                    f"context is {size} bytes of JSON; the limit is"
                    f" {self.config.max_context_bytes}",
                )
        if url is not None:
            if len(url.encode()) > self.config.max_url_length:
                raise InvalidArgument(
                    f"url is {len(url.encode())} bytes long; the limit is"
                    f" {self.config.max_url_length}"
                )
            with contextlib.suppress(UnresolvableHost):  # DNS may answer by run time
                await self.guard.check(url)


_bearer = HTTPBearer(auto_error=False, description="the API key of `pgmbus timers add-client`")


async def client_id(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> int:
    """The id of the client whose API key the request carries (401 otherwise)."""
    state: _State = request.app.state.timers
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(401, "missing bearer API key", {"WWW-Authenticate": "Bearer"})
    key = credentials.credentials
    cached = state.auth.get(key)
    now = time.monotonic()
    if cached is not None and cached[1] > now:
        return cached[0]
    async with state.pool.connection() as conn:
        cid = await store.authenticate(conn, key)
    if cid is None:
        raise HTTPException(401, "unknown API key", {"WWW-Authenticate": "Bearer"})
    state.auth[key] = (cid, now + _AUTH_CACHE_S)
    return cid


Owner = Annotated[int, Depends(client_id)]


def create_app(config: ServiceConfig) -> FastAPI:
    """Build the HTTP application for ``config`` (the pool opens at startup)."""
    state = _State(config)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await state.pool.open(wait=True)
        stop = asyncio.Event()
        task: asyncio.Task[None] | None = None
        if config.run_dispatcher:
            dispatcher = Dispatcher(config.dsn, config.dispatcher, state.guard)
            task = asyncio.create_task(dispatcher.run(stop))
        try:
            yield
        finally:
            await state.batcher.close()
            stop.set()
            if task is not None:
                await task
            await state.pool.close()

    app = FastAPI(
        title="pgmbus timers",
        version=__version__,
        description="Scheduled HTTP callbacks (CallMeBack) stored in PostgreSQL.",
        lifespan=lifespan,
        responses={401: {"model": ErrorBody}, 422: {"model": ErrorBody}},
    )
    http_errors.install(app)

    errors: dict[int | str, dict[str, Any]] = {
        404: {"model": ErrorBody},
        409: {"model": ErrorBody},
        413: {"model": ErrorBody},
        422: {"model": ErrorBody},
    }

    @app.get("/healthz", tags=["service"])
    async def healthz() -> dict[str, str]:
        async with state.pool.connection() as conn:
            await store.ping(conn)
        return {"status": "ok"}

    @app.post(
        "/v1/callbacks",
        response_model=Callback,
        status_code=201,
        responses={200: {"model": Callback, "description": "the key existed"}, **errors},
        tags=["callbacks"],
    )
    async def create_callback(body: CallbackCreate, owner: Owner, response: Response) -> Any:
        """Create a callback; idempotent on (group_key, event_key): 200 and the stored one."""
        await state.check_fields(body.url, body.context)
        item = body.model_dump(mode="json")
        item["client_id"] = owner
        created, callback = await state.batcher.submit(item)
        if not created:
            response.status_code = 200
        return callback

    @app.get("/v1/callbacks", response_model=CallbackPage, tags=["callbacks"])
    async def list_callbacks(
        owner: Owner,
        group_key: Annotated[str | None, Query()] = None,
        status: Annotated[Status | None, Query()] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        after: Annotated[int, Query(ge=0, le=_MAX_ID)] = 0,
    ) -> Any:
        """The client's callbacks in creation order, a page at a time."""
        async with state.pool.connection() as conn:
            items = await store.list_callbacks(
                conn, owner, group_key=group_key, status=status, limit=limit, after=after
            )
        next_after = items[-1]["id"] if len(items) == limit else None
        return {"items": items, "next_after": next_after}

    @app.get(
        "/v1/callbacks/{group_key}/{event_key}",
        response_model=Callback,
        responses=errors,
        tags=["callbacks"],
    )
    async def get_callback(group_key: Key, event_key: Key, owner: Owner) -> Any:
        async with state.pool.connection() as conn:
            return await store.get(conn, owner, group_key, event_key)

    @app.patch(
        "/v1/callbacks/{group_key}/{event_key}",
        response_model=Callback,
        responses=errors,
        tags=["callbacks"],
    )
    async def update_callback(
        group_key: Key, event_key: Key, body: CallbackUpdate, owner: Owner
    ) -> Any:
        """Change run_at/originally_run_at, url, context of a pending callback (or a cancelled
        one with ``i_ensure_pending``, which makes it pending again)."""
        await state.check_fields(body.url, body.context)
        async with state.pool.connection() as conn:
            return await store.update(
                conn,
                owner,
                group_key,
                event_key,
                run_at=body.run_at,
                originally_run_at=body.originally_run_at,
                url=body.url,
                context=body.context,
                i_ensure_pending=body.i_ensure_pending,
            )

    @app.post(
        "/v1/callbacks/{group_key}/{event_key}/cancel",
        response_model=Callback,
        responses=errors,
        tags=["callbacks"],
    )
    async def cancel_callback(group_key: Key, event_key: Key, owner: Owner) -> Any:
        """Cancel a pending callback (409 for any other status)."""
        async with state.pool.connection() as conn:
            return await store.cancel(conn, owner, group_key, event_key)

    @app.delete(
        "/v1/callbacks/{group_key}/{event_key}",
        status_code=204,
        responses=errors,
        tags=["callbacks"],
    )
    async def delete_callback(
        group_key: Key,
        event_key: Key,
        owner: Owner,
        force: Annotated[bool, Query()] = False,
    ) -> Response:
        """Delete a callback; a pending one due within a minute needs ``force=true`` (409)."""
        async with state.pool.connection() as conn:
            await store.delete(conn, owner, group_key, event_key, force=force)
        return Response(status_code=204)

    @app.get(
        "/v1/callbacks/{group_key}/{event_key}/history",
        response_model=History,
        responses=errors,
        tags=["callbacks"],
    )
    async def callback_history(group_key: Key, event_key: Key, owner: Owner) -> Any:
        async with state.pool.connection() as conn:
            return await store.history(conn, owner, group_key, event_key)

    @app.post(
        "/v1/schedules",
        response_model=Schedule,
        status_code=201,
        responses={200: {"model": Schedule, "description": "the key existed"}, **errors},
        tags=["schedules"],
    )
    async def create_schedule(body: ScheduleCreate, owner: Owner, response: Response) -> Any:
        """Create a recurring schedule (cron in a time zone, or a fixed interval)."""
        if (body.cron is None) == (body.interval_s is None):
            raise InvalidArgument("give exactly one of cron and interval_s")
        if body.cron is not None:
            cron.check(body.cron, body.timezone, start_at=body.start_at, end_at=body.end_at)
        await state.check_fields(body.url, body.context)
        async with state.pool.connection() as conn:
            created, schedule = await store.create_schedule(
                conn,
                owner,
                body.schedule_key,
                body.url,
                cron=body.cron,
                timezone=body.timezone,
                interval_s=body.interval_s,
                group_key=body.group_key,
                context=body.context,
                retry=body.retry.model_dump(),
                stop_after_delay_s=body.stop_after_delay_s,
                start_at=body.start_at,
                end_at=body.end_at,
            )
        if not created:
            response.status_code = 200
        return schedule

    @app.get("/v1/schedules", response_model=list[Schedule], tags=["schedules"])
    async def list_schedules(owner: Owner) -> Any:
        async with state.pool.connection() as conn:
            return await store.list_schedules(conn, owner)

    @app.post(
        "/v1/schedules/{schedule_key}/pause",
        response_model=Schedule,
        responses=errors,
        tags=["schedules"],
    )
    async def pause_schedule(schedule_key: str, owner: Owner) -> Any:
        """Pause: no more callbacks are generated; generated pending ones are removed."""
        async with state.pool.connection() as conn:
            return await store.set_schedule_paused(conn, owner, schedule_key, True)

    @app.post(
        "/v1/schedules/{schedule_key}/resume",
        response_model=Schedule,
        responses=errors,
        tags=["schedules"],
    )
    async def resume_schedule(schedule_key: str, owner: Owner) -> Any:
        """Resume from now (missed occurrences are not made up)."""
        async with state.pool.connection() as conn:
            return await store.set_schedule_paused(conn, owner, schedule_key, False)

    @app.delete(
        "/v1/schedules/{schedule_key}", status_code=204, responses=errors, tags=["schedules"]
    )
    async def delete_schedule(schedule_key: str, owner: Owner) -> Response:
        async with state.pool.connection() as conn:
            await store.delete_schedule(conn, owner, schedule_key)
        return Response(status_code=204)

    app.state.timers = state
    return app
