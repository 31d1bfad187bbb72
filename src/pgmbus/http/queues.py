"""The queues HTTP API: queues, stats, posts, leases and the dead-message queue."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, HTTPException, Query, Request, Response

from pgmbus.errors import translating
from pgmbus.http.auth import Caller, require
from pgmbus.http.errors import ERROR_RESPONSES
from pgmbus.http.queue_models import (
    BatchIn,
    BuryIn,
    DmqOut,
    DmqPage,
    ExtendIn,
    Leased,
    LeaseEnd,
    LeaseIn,
    NackIn,
    Name,
    Posted,
    PostIn,
    QueueCreate,
    QueueOut,
    Replayed,
    StatsOut,
    TokenIn,
)
from pgmbus.http.state import query, state_of
from pgmbus.queues import Message

router = APIRouter(prefix="/v1", tags=["queues"], responses=ERROR_RESPONSES)


def _token_message(queue: str, token: UUID) -> Message:
    # ack/nack/extend/bury need only the queue and the token of a leased message
    epoch = datetime.fromtimestamp(0, UTC)
    return Message(queue, None, 0, "", epoch, None, None, {}, None, {}, None, 0, token, None)


def _message(m: Message) -> dict[str, Any]:
    return {
        "queue": m.queue,
        "consumer": m.consumer,
        "iid": m.iid,
        "added": m.added,
        "delayed_until": m.delayed_until,
        "expires": m.expires,
        "headers": m.headers,
        "properties": m.properties,
        "data": m.data,
        "attempts": m.attempts,
        "token": m.lease_token,
        "lease_until": m.lease_until,
    }


@router.get("/queues", response_model=list[QueueOut])
async def list_queues(request: Request, who: Caller) -> Any:
    """The queues the key may read, with their consumers."""
    queues = await state_of(request).bus.queues()
    return [q.__dict__ for q in queues if who.can("queues", "read", q.qname)]


@router.post(
    "/queues",
    response_model=QueueOut,
    status_code=201,
    responses={200: {"model": QueueOut, "description": "the queue existed"}},
)
async def create_queue(request: Request, body: QueueCreate, who: Caller, response: Response) -> Any:
    """Create a queue with its ``default`` consumer (200 and the queue when it exists)."""
    require(who, "queues", "write", body.queue)
    state = state_of(request)
    async with state.pool.connection() as conn:  # one transaction: lock, look, create
        with translating():
            await conn.execute(query("queue_catalog_lock"))
            cur = await conn.execute(query("queue_exists"), {"queue": body.queue})
            row = await cur.fetchone()
            if row is not None and row[0]:
                response.status_code = 200
            else:
                params = {"queue": body.queue, "roles": body.roles_security}
                await conn.execute(query("queue_create"), params)
    queues = {q.qname: q for q in await state.bus.queues()}
    return queues[body.queue].__dict__


@router.get("/queues/{queue}/stats", response_model=list[StatsOut])
async def queue_stats(request: Request, queue: Name, who: Caller) -> Any:
    """Depth, ready, delayed, leased, expired, oldest age, dead messages, posted and consumed
    totals and paused, per consumer."""
    require(who, "queues", "read", queue)
    stats = await state_of(request).bus.stats(queue)
    if not stats:
        raise HTTPException(404, f"queue {queue!r} does not exist")
    return [
        {
            **s.__dict__,
            "oldest_age_s": None if s.oldest_age is None else s.oldest_age.total_seconds(),
        }
        for s in stats
    ]


@router.post("/queues/{queue}/messages", response_model=Posted, status_code=201)
async def post_message(request: Request, queue: Name, body: PostIn, who: Caller) -> Any:
    """Post one message; committed when the answer is sent. With ``dedupe_key`` and a message
    of that key pending, nothing is posted and that message's iid is returned."""
    require(who, "queues", "post", queue)
    iid = await state_of(request).bus.post(
        queue,
        body.data,
        headers=body.headers,
        properties=body.properties,
        delayed_until=body.delayed_until,
        expires=body.expires,
        iid=body.iid,
        dedupe_key=body.dedupe_key,
        consume_after=body.consume_after,
        priority=body.priority,
    )
    return {"iids": [iid]}


@router.post("/queues/{queue}/messages/batch", response_model=Posted, status_code=201)
async def post_batch(request: Request, queue: Name, body: BatchIn, who: Caller) -> Any:
    """Post many messages in one transaction; all or none."""
    require(who, "queues", "post", queue)
    iids = await state_of(request).bus.post_batch(
        queue,
        [m.data for m in body.messages],
        headers=[m.headers or {} for m in body.messages],
        properties=[m.properties or {} for m in body.messages],
        delayed_until=body.delayed_until,
        expires=body.expires,
        priority=[m.priority for m in body.messages],
    )
    return {"iids": iids}


@router.post("/queues/{queue}/lease", response_model=Leased)
async def lease(request: Request, queue: Name, body: LeaseIn, who: Caller) -> Any:
    """Claim up to ``limit`` messages under a lease; finish each with its token."""
    require(who, "queues", "consume", queue)
    state = state_of(request)
    messages = await state.long_polls.lease(
        state.bus,
        queue,
        body.consumer,
        limit=body.limit,
        lease=body.lease_s,
        max_attempts=body.max_attempts,
        wait_s=body.wait_s,
        gone=request.is_disconnected,
    )
    return {"messages": [_message(m) for m in messages]}


@router.post("/queues/{queue}/ack", status_code=204)
async def ack(request: Request, queue: Name, body: TokenIn, who: Caller) -> Response:
    """The leased message is done: remove it (409 when the lease was lost)."""
    require(who, "queues", "consume", queue)
    await state_of(request).bus.ack(_token_message(queue, body.token))
    return Response(status_code=204)


@router.post("/queues/{queue}/nack", status_code=204)
async def nack(request: Request, queue: Name, body: NackIn, who: Caller) -> Response:
    """Give the leased message back; delivered again after ``delay_s``."""
    require(who, "queues", "consume", queue)
    await state_of(request).bus.nack(_token_message(queue, body.token), delay=body.delay_s)
    return Response(status_code=204)


@router.post("/queues/{queue}/extend", response_model=LeaseEnd)
async def extend(request: Request, queue: Name, body: ExtendIn, who: Caller) -> Any:
    """Make the lease end ``lease_s`` seconds from now."""
    require(who, "queues", "consume", queue)
    end = await state_of(request).bus.extend(_token_message(queue, body.token), body.lease_s)
    return {"lease_until": end}


@router.post("/queues/{queue}/bury", response_model=DmqOut)
async def bury(request: Request, queue: Name, body: BuryIn, who: Caller) -> Any:
    """Move the leased message to the dead-message queue with ``reason``."""
    require(who, "queues", "consume", queue)
    state = state_of(request)
    dmq_id = await state.bus.bury(_token_message(queue, body.token), body.reason)
    return await _dead(request, queue, dmq_id)


@router.get("/dmq", response_model=DmqPage)
async def dmq_all(
    request: Request,
    who: Caller,
    queue: Annotated[Name | None, Query()] = None,
    after: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Any:
    """Dead messages of every queue the key may read (or of ``queue``), oldest first."""
    if queue is not None:
        require(who, "queues", "read", queue)
    rows = await state_of(request).rows(
        query("dmq_page"), {"queue": queue, "after": after, "limit": limit}
    )
    next_after = rows[-1]["dmq_id"] if len(rows) == limit else None
    return {
        "items": [r for r in rows if who.can("queues", "read", r["qname"])],
        "next_after": next_after,
    }


@router.get("/queues/{queue}/dmq", response_model=DmqPage)
async def dmq_list(
    request: Request,
    queue: Name,
    who: Caller,
    after: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Any:
    """Dead messages of ``queue``, oldest first, a page at a time (404 for an unknown queue
    that has none left)."""
    page = await dmq_all(request, who, queue, after, limit)
    if not page["items"] and not await state_of(request).value(
        query("queue_exists"), {"queue": queue}
    ):
        raise HTTPException(404, f"queue {queue!r} does not exist")
    return page


async def _dead(request: Request, queue: str, dmq_id: int) -> dict[str, Any]:
    rows = await state_of(request).rows(query("dmq_get"), {"dmq_id": dmq_id})
    if not rows or rows[0]["qname"] != queue:
        raise HTTPException(404, f"dead message {dmq_id} of queue {queue!r} does not exist")
    return rows[0]


@router.get("/queues/{queue}/dmq/{dmq_id}", response_model=DmqOut)
async def dmq_get(request: Request, queue: Name, dmq_id: int, who: Caller) -> Any:
    """One dead message."""
    require(who, "queues", "read", queue)
    return await _dead(request, queue, dmq_id)


@router.post("/queues/{queue}/dmq/{dmq_id}/replay", response_model=Replayed)
async def dmq_replay(request: Request, queue: Name, dmq_id: int, who: Caller) -> Any:
    """Deliver a dead message again to its consumer (to every consumer when it names none)."""
    require(who, "queues", "write", queue)
    await _dead(request, queue, dmq_id)
    return {"iid": await state_of(request).bus.dmq_replay(dmq_id)}


@router.delete("/queues/{queue}/dmq/{dmq_id}", status_code=204)
async def dmq_delete(request: Request, queue: Name, dmq_id: int, who: Caller) -> Response:
    """Delete a dead message for good."""
    require(who, "queues", "write", queue)
    await _dead(request, queue, dmq_id)
    await state_of(request).rows(query("dmq_delete"), {"dmq_id": dmq_id})
    return Response(status_code=204)
