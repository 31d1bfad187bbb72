"""The queue message browser of the dashboard: list, search and inspect a queue's messages, and
an operator's actions on one message (delete, bury, release a lease, replay a dead one).

Reads lock and lease nothing. Every call is checked against the key's scope on the queue of
the path, and the SQL looks only at that queue's rows: an iid of another queue is a 404 here.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import AwareDatetime

from pgmbus.http.auth import Caller, require
from pgmbus.http.errors import ERROR_RESPONSES
from pgmbus.http.message_models import (
    Acted,
    ActIn,
    BrowseState,
    BuryMessageIn,
    Cursor,
    FieldFilter,
    Filters,
    HeaderFilter,
    Iid,
    MessageDetail,
    MessagesPage,
    cursor_of,
    parse_cursor,
)
from pgmbus.http.queue_models import Name
from pgmbus.http.state import query, state_of

router = APIRouter(prefix="/v1", tags=["queues"], responses=ERROR_RESPONSES)


@router.get("/queues/{queue}/messages", response_model=MessagesPage)
async def list_messages(
    request: Request,
    queue: Name,
    who: Caller,
    state: Annotated[BrowseState, Query()] = "all",
    consumer: Annotated[Name | None, Query()] = None,
    priority: Annotated[int | None, Query(ge=0, le=32767)] = None,
    header: Annotated[HeaderFilter | None, Query(description="`name=value` of a header")] = None,
    field: Annotated[
        FieldFilter | None,
        Query(description="`a.b.c=value`: the text at that path of data (numbers as JSON text)"),
    ] = None,
    since: Annotated[AwareDatetime | None, Query(description="added at or after")] = None,
    until: Annotated[AwareDatetime | None, Query(description="added before")] = None,
    iid: Annotated[Iid | None, Query(description="only the message of this iid")] = None,
    after: Annotated[Cursor | None, Query(description="`next_after` of the page before")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> Any:
    """The queue's deliveries (one per consumer: ready, delayed, leased) in message order, then
    its dead messages, a page at a time; nothing is locked or leased. A page reads at most
    10,000 rows: when the filters leave fewer than ``limit`` among them, ``next_after`` goes on
    after the last row read (a page can then be short, even empty, and still continue)."""
    require(who, "queues", "read", queue)
    after_id, after_c, after_dead = parse_cursor(after)
    found = Filters.parse(header, field)
    params = {
        "queue": queue,
        "state": state,
        "consumer": consumer,
        "priority": priority,
        "header": found.header,
        "value": found.value,
        "path": found.path,
        "field": found.field,
        "since": since,
        "until": until,
        "iid": iid,
        "after_id": after_id,
        "after_c": after_c,
        "after_dead": after_dead,
        "limit": limit,
    }
    rows = await state_of(request).rows(query("messages_page"), params)
    # a full page, or a page that read all it may ('more': where to go on), continues
    items = [r for r in rows if r["kind"] != "more"]
    more = len(items) == limit or (bool(rows) and rows[-1]["kind"] == "more")
    return {"items": items, "next_after": cursor_of(rows[-1]) if more else None}


@router.get("/queues/{queue}/messages/{iid}", response_model=MessageDetail)
async def message(request: Request, queue: Name, iid: Iid, who: Caller) -> Any:
    """One message of the queue: payloads, each consumer's delivery, dead copies, what it waits
    for, the route history its headers carry and its saga."""
    require(who, "queues", "read", queue)
    found = await state_of(request).value(query("message_detail"), {"queue": queue, "iid": iid})
    if found is None:
        raise HTTPException(404, f"queue {queue!r} has no message {iid!r}")
    return found


async def _act(
    request: Request, queue: str, iid: str, action: str, who: Caller, body: ActIn, reason: Any
) -> dict[str, Any]:
    require(who, "queues", "write", queue)
    params = {
        "queue": queue,
        "iid": iid,
        "action": action,
        "consumer": body.consumer,
        "reason": reason,
    }
    changed = await state_of(request).value(query("message_act"), params)
    return {"queue": queue, "iid": iid, "action": action, "changed": changed}


@router.post("/queues/{queue}/messages/{iid}/replay", response_model=Acted)
async def replay(request: Request, queue: Name, iid: Iid, body: ActIn, who: Caller) -> Any:
    """Deliver the message's dead copies again (409 when it has none)."""
    return await _act(request, queue, iid, "replay", who, body, None)


@router.post("/queues/{queue}/messages/{iid}/release", response_model=Acted)
async def release(request: Request, queue: Name, iid: Iid, body: ActIn, who: Caller) -> Any:
    """End the message's leases: claimable again at once, attempts kept (409 when not leased).
    The worker that held it loses it: its ack answers 409."""
    return await _act(request, queue, iid, "release", who, body, None)


@router.post("/queues/{queue}/messages/{iid}/bury", response_model=Acted)
async def bury(request: Request, queue: Name, iid: Iid, body: BuryMessageIn, who: Caller) -> Any:
    """Move the message's deliveries to the dead-message queue with ``reason`` (409 while a
    worker leases it: release it first)."""
    return await _act(request, queue, iid, "bury", who, body, body.reason)


@router.delete("/queues/{queue}/messages/{iid}", response_model=Acted)
async def delete(
    request: Request,
    queue: Name,
    iid: Iid,
    who: Caller,
    consumer: Annotated[Name | None, Query(description="only this consumer's delivery")] = None,
) -> Any:
    """Delete the message's deliveries and dead copies for good (409 while a worker leases it)."""
    return await _act(request, queue, iid, "delete", who, ActIn(consumer=consumer), None)
