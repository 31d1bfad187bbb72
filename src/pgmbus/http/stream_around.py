"""A consumer group's position in the stream log with the events around it, for the
dashboard: what the group consumed last and what it reads next, on one topic."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from pgmbus.http.auth import Caller, require
from pgmbus.http.errors import ERROR_RESPONSES
from pgmbus.http.state import query, state_of
from pgmbus.http.stream_models import Group, Topic

router = APIRouter(prefix="/v1/streams", tags=["streams"], responses=ERROR_RESPONSES)


class AroundEvent(BaseModel):
    """An event of the log near the group's position."""

    id: int
    topic: str
    key: str | None
    payload: Any
    headers: dict[str, Any] | None
    published_at: datetime


class Around(BaseModel):
    """The group's committed position and the events just before and after it."""

    topic: str
    group: str
    slot: int | None
    cursor: str
    before: list[AroundEvent]
    after: list[AroundEvent]


@router.get("/{topic}/groups/{group}/around", response_model=Around)
async def around(
    request: Request,
    topic: Topic,
    group: Group,
    who: Caller,
    slot: Annotated[int | None, Query(ge=0, le=255, description="default 0")] = None,
    n: Annotated[int, Query(ge=1, le=100, description="events on each side")] = 10,
) -> Any:
    """Up to ``n`` events of ``topic`` the group consumed last (newest first) and up to ``n`` it
    reads next (oldest first), around its committed position; nothing is locked or read."""
    require(who, "streams", "read", topic)
    require(who, "streams", "read", group)
    state = state_of(request)
    params = {"group": group, "topic": topic, "slot": slot or 0, "n": n}
    rows = await state.rows(query("group_around"), params)  # 404 first for a missing slot
    cursor = await state.value(query("group_position"), params)
    return {
        "topic": topic,
        "group": group,
        "slot": slot,
        "cursor": cursor,
        "before": [r for r in rows if r["side"] == "before"],
        "after": [r for r in rows if r["side"] == "after"],
    }
