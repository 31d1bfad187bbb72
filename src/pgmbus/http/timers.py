"""The timers HTTP API: callbacks and schedules of the authenticated owner client.

Before anything is stored, a request's values are checked against their bounds
(:mod:`pgmbus.timers.models`), its context against ``ServiceConfig.max_context_bytes`` (413
``too_large``), its URL against ``max_url_length`` (422) and the network guard (422
``refused_url`` when the host is, or resolves to, a refused address, or when the URL cannot be
parsed, its host name encoded or its port connected to; a host that does not resolve now is
accepted, and the dispatcher checks again before every call), and a schedule's cron
against never firing (422). Errors come in the one shape of :mod:`pgmbus.http.errors`.
"""

from __future__ import annotations

import contextlib
import json
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request, Response

from pgmbus.errors import InvalidArgument, InvalidPayload
from pgmbus.http.auth import Caller, require
from pgmbus.http.errors import ERROR_RESPONSES
from pgmbus.http.state import AppState, state_of
from pgmbus.json_depth import MAX_DEPTH, deeper_than
from pgmbus.timers import cron
from pgmbus.timers import store_async as store
from pgmbus.timers.models import (
    Callback,
    CallbackCreate,
    CallbackPage,
    CallbackUpdate,
    History,
    Key,
    Schedule,
    ScheduleCreate,
    Status,
)
from pgmbus.timers.netguard import UnresolvableHost

router = APIRouter(responses=ERROR_RESPONSES)

_MAX_ID = 2**63 - 1


async def check_fields(state: AppState, url: str | None, context: dict[str, Any] | None) -> None:
    """Refuse a context over its size limit (413) or a URL that may not be called (422)."""
    config = state.config
    if context is not None:
        if deeper_than(context):  # stored, it could not be serialized back (a 500 after it)
            raise InvalidPayload(f"context is nested more than {MAX_DEPTH} levels deep")
        size = len(json.dumps(context, ensure_ascii=False).encode())
        if size > config.max_context_bytes:
            raise HTTPException(
                413, f"context is {size} bytes of JSON; the limit is {config.max_context_bytes}"
            )
    if url is not None:
        length = len(url.encode())
        if length > config.max_url_length:
            raise InvalidArgument(
                f"url is {length} bytes long; the limit is {config.max_url_length}"
            )
        with contextlib.suppress(UnresolvableHost):  # DNS may answer by run time
            await state.guard.check(url)


@router.post(
    "/v1/callbacks",
    response_model=Callback,
    status_code=201,
    responses={200: {"model": Callback, "description": "the key existed"}, **ERROR_RESPONSES},
    tags=["callbacks"],
)
async def create_callback(
    request: Request, body: CallbackCreate, who: Caller, response: Response
) -> Any:
    """Create a callback; idempotent on (group_key, event_key): 200 and the stored one."""
    state = state_of(request)
    await check_fields(state, body.url, body.context)
    item = body.model_dump(mode="json")
    item["client_id"] = who.client_id
    created, callback = await state.batcher.submit(item)
    if not created:
        response.status_code = 200
    return Callback.from_record(callback)


@router.get("/v1/callbacks", response_model=CallbackPage, tags=["callbacks"])
async def list_callbacks(
    request: Request,
    who: Caller,
    group_key: Annotated[str | None, Query()] = None,
    status: Annotated[Status | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    after: Annotated[int, Query(ge=0, le=_MAX_ID)] = 0,
) -> Any:
    """The client's callbacks in creation order, a page at a time."""
    async with state_of(request).pool.connection() as conn:
        items = await store.list_callbacks(
            conn, who.client_id, group_key=group_key, status=status, limit=limit, after=after
        )
    next_after = items[-1].id if len(items) == limit else None
    return CallbackPage(items=[Callback.from_record(cb) for cb in items], next_after=next_after)


@router.get(
    "/v1/callbacks/{group_key}/{event_key}",
    response_model=Callback,
    responses=ERROR_RESPONSES,
    tags=["callbacks"],
)
async def get_callback(request: Request, group_key: Key, event_key: Key, who: Caller) -> Any:
    async with state_of(request).pool.connection() as conn:
        callback = await store.get(conn, who.client_id, group_key, event_key)
    return Callback.from_record(callback)


@router.patch(
    "/v1/callbacks/{group_key}/{event_key}",
    response_model=Callback,
    responses=ERROR_RESPONSES,
    tags=["callbacks"],
)
async def update_callback(
    request: Request, group_key: Key, event_key: Key, body: CallbackUpdate, who: Caller
) -> Any:
    """Change run_at/originally_run_at, url, context of a pending callback (or a cancelled
    one with ``i_ensure_pending``, which makes it pending again)."""
    state = state_of(request)
    await check_fields(state, body.url, body.context)
    async with state.pool.connection() as conn:
        callback = await store.update(
            conn,
            who.client_id,
            group_key,
            event_key,
            run_at=body.run_at,
            originally_run_at=body.originally_run_at,
            url=body.url,
            context=body.context,
            i_ensure_pending=body.i_ensure_pending,
        )
    return Callback.from_record(callback)


@router.post(
    "/v1/callbacks/{group_key}/{event_key}/cancel",
    response_model=Callback,
    responses=ERROR_RESPONSES,
    tags=["callbacks"],
)
async def cancel_callback(request: Request, group_key: Key, event_key: Key, who: Caller) -> Any:
    """Cancel a pending callback (409 for any other status)."""
    async with state_of(request).pool.connection() as conn:
        callback = await store.cancel(conn, who.client_id, group_key, event_key)
    return Callback.from_record(callback)


@router.delete(
    "/v1/callbacks/{group_key}/{event_key}",
    status_code=204,
    responses=ERROR_RESPONSES,
    tags=["callbacks"],
)
async def delete_callback(
    request: Request,
    group_key: Key,
    event_key: Key,
    who: Caller,
    force: Annotated[bool, Query()] = False,
) -> Response:
    """Delete a callback; a pending one due within a minute needs ``force=true`` (409)."""
    async with state_of(request).pool.connection() as conn:
        await store.delete(conn, who.client_id, group_key, event_key, force=force)
    return Response(status_code=204)


@router.get(
    "/v1/callbacks/{group_key}/{event_key}/history",
    response_model=History,
    responses=ERROR_RESPONSES,
    tags=["callbacks"],
)
async def callback_history(request: Request, group_key: Key, event_key: Key, who: Caller) -> Any:
    async with state_of(request).pool.connection() as conn:
        history = await store.history(conn, who.client_id, group_key, event_key)
    return History.from_record(history)


@router.post(
    "/v1/schedules",
    response_model=Schedule,
    status_code=201,
    responses={200: {"model": Schedule, "description": "the key existed"}, **ERROR_RESPONSES},
    tags=["schedules"],
)
async def create_schedule(
    request: Request, body: ScheduleCreate, who: Caller, response: Response
) -> Any:
    """Create a recurring schedule (cron in a time zone, or a fixed interval) that calls a URL
    or posts to a queue (``target: {"queue": ...}``, which needs the scope queues:post on it)."""
    if body.target_queue is not None:
        require(who, "queues", "post", body.target_queue)
    if (body.cron is None) == (body.interval_s is None):
        raise InvalidArgument("give exactly one of cron and interval_s")
    if body.cron is not None:
        cron.check(body.cron, body.timezone, start_at=body.start_at, end_at=body.end_at)
    state = state_of(request)
    await check_fields(state, body.target_url, body.context)
    async with state.pool.connection() as conn:
        created, schedule = await store.create_schedule(
            conn,
            who.client_id,
            body.schedule_key,
            body.target_url,
            queue=body.target_queue,
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
    return Schedule.from_record(schedule)


@router.get("/v1/schedules", response_model=list[Schedule], tags=["schedules"])
async def list_schedules(request: Request, who: Caller) -> Any:
    async with state_of(request).pool.connection() as conn:
        schedules = await store.list_schedules(conn, who.client_id)
    return [Schedule.from_record(s) for s in schedules]


@router.post(
    "/v1/schedules/{schedule_key}/pause",
    response_model=Schedule,
    responses=ERROR_RESPONSES,
    tags=["schedules"],
)
async def pause_schedule(request: Request, schedule_key: str, who: Caller) -> Any:
    """Pause: no more callbacks are generated; generated pending ones are removed."""
    async with state_of(request).pool.connection() as conn:
        schedule = await store.set_schedule_paused(conn, who.client_id, schedule_key, True)
    return Schedule.from_record(schedule)


@router.post(
    "/v1/schedules/{schedule_key}/resume",
    response_model=Schedule,
    responses=ERROR_RESPONSES,
    tags=["schedules"],
)
async def resume_schedule(request: Request, schedule_key: str, who: Caller) -> Any:
    """Resume from now (missed occurrences are not made up)."""
    async with state_of(request).pool.connection() as conn:
        schedule = await store.set_schedule_paused(conn, who.client_id, schedule_key, False)
    return Schedule.from_record(schedule)


@router.delete(
    "/v1/schedules/{schedule_key}", status_code=204, responses=ERROR_RESPONSES, tags=["schedules"]
)
async def delete_schedule(request: Request, schedule_key: str, who: Caller) -> Response:
    async with state_of(request).pool.connection() as conn:
        await store.delete_schedule(conn, who.client_id, schedule_key)
    return Response(status_code=204)
