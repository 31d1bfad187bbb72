"""Operators' reads across owners: who am I, timers of every client, schedules, sagas."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request

from pgmbus.http.auth import Caller
from pgmbus.http.errors import ERROR_RESPONSES
from pgmbus.http.scopes import Principal
from pgmbus.http.state import query, state_of
from pgmbus.timers import store_async as store
from pgmbus.timers.models import History, Key, Status

router = APIRouter(prefix="/v1", tags=["operations"], responses=ERROR_RESPONSES)

SagaState = Literal["running", "completed", "compensating", "compensated"]


def _sees(who: Principal, client: str) -> bool:
    return client == who.name or who.can("timers", "read", client)


async def _visible(request: Request, who: Principal) -> list[str]:
    """The clients whose timers the key may see (filtered in SQL, before a page's LIMIT)."""
    rows = await state_of(request).rows(query("timer_client_names"), {})
    return [r["name"] for r in rows if _sees(who, r["name"])]


@router.get("/whoami")
async def whoami(who: Caller) -> dict[str, Any]:
    """The key's client name and scopes (the dashboard hides what they do not allow)."""
    return {"client": who.name, "scopes": who.scope_texts()}


@router.get("/ops/timers")
async def timers_overview(request: Request, who: Caller) -> list[dict[str, Any]]:
    """Callbacks per client the key may see: pending, due, late, notified, failed, ..."""
    params = {"client": None, "late_s": state_of(request).config.late_after_s}
    rows = await state_of(request).rows(query("timers_overview"), params)
    return [r for r in rows if _sees(who, r["client"])]


@router.get("/ops/callbacks")
async def callbacks(
    request: Request,
    who: Caller,
    client: Annotated[str | None, Query(max_length=64)] = None,
    status: Annotated[Status | None, Query()] = None,
    due: Annotated[bool, Query(description="only pending callbacks already due")] = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[dict[str, Any]]:
    """Callbacks of the clients the key may see, newest first."""
    if client is not None and not _sees(who, client):
        raise HTTPException(403, f"the API key has no scope allowing timers:read on {client!r}")
    clients = await _visible(request, who)
    params = {"clients": clients, "client": client, "status": status, "due": due, "limit": limit}
    return await state_of(request).rows(query("timers_page"), params)


@router.get("/ops/callbacks/{client}/{group_key}/{event_key}/history", response_model=History)
async def callback_history(
    request: Request, client: str, group_key: Key, event_key: Key, who: Caller
) -> Any:
    """A callback's changes and HTTP attempts, for any client the key may see."""
    if not _sees(who, client):
        raise HTTPException(403, f"the API key has no scope allowing timers:read on {client!r}")
    state = state_of(request)
    client_id = await state.value(query("timer_client_id"), {"name": client})
    if client_id is None:
        raise HTTPException(404, f"timer client {client!r} does not exist")
    async with state.pool.connection() as conn:
        found = await store.history(conn, int(client_id), group_key, event_key)
    return History.from_record(found)


@router.get("/ops/schedules")
async def schedules(
    request: Request,
    who: Caller,
    client: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> list[dict[str, Any]]:
    """Schedules of the clients the key may see."""
    params = {"clients": await _visible(request, who), "client": client, "limit": limit}
    return await state_of(request).rows(query("schedules_page"), params)


@router.get("/ops/sagas")
async def sagas(
    request: Request,
    who: Caller,
    state: Annotated[SagaState | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[dict[str, Any]]:
    """Sagas, newest first, with each step's forward and compensation state.

    Sagas span queues: reading them needs ``queues:read:*``.
    """
    if not who.can("queues", "read", "*"):
        raise HTTPException(403, "sagas need the scope queues:read:*")
    return await state_of(request).rows(query("saga_page"), {"state": state, "limit": limit})
