"""The streams HTTP API: publish, consumer groups, lag, seek, lease-style reads, live listeners."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Header, HTTPException, Request, Response
from fastapi.responses import StreamingResponse
from psycopg import AsyncConnection
from psycopg.rows import dict_row

from pgmbus.data.streams import agroup_exists, astream_groups
from pgmbus.errors import AlreadyExists
from pgmbus.http.auth import Caller, require
from pgmbus.http.errors import ERROR_RESPONSES, ErrorBody
from pgmbus.http.listeners import TooManyListeners, stream
from pgmbus.http.state import query, state_of
from pgmbus.http.stream_models import (
    CommitIn,
    Committed,
    DeadLetter,
    ExtendIn,
    Group,
    GroupCreate,
    GroupOut,
    IdempotencyKey,
    PublishBatchIn,
    Published,
    PublishIn,
    ReadIn,
    ReadOut,
    SeekIn,
    SubscriptionIn,
    SubscriptionOut,
)
from pgmbus.streams import client_async

router = APIRouter(prefix="/v1/streams", tags=["streams"], responses=ERROR_RESPONSES)

Conn = AsyncConnection[Any]


async def _groups(conn: Conn, group: str | None) -> list[dict[str, Any]]:
    """Groups with their slots' status and live HTTP leases, from three reads."""
    groups = await astream_groups(conn, group)
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(query("stream_leases"), {"group": group})
        leases = await cur.fetchall()
    status = await client_async.group_status(conn)
    now = datetime.now(UTC)
    out = []
    for g in groups:
        slots = [s for s in status if s["group_name"] == g["name"]]
        slot_status = [
            {
                "slot": s["slot"],
                "group_position": s["group_position"],
                "committed_at": s["committed_at"],
                "pending_events": s["pending_events"],
                "lag_s": _age(now, s["oldest_pending_at"]),
            }
            for s in slots
        ]
        out.append(
            {
                **g,
                "retries": slots[0]["retries"] if slots else 0,
                "dmq": slots[0]["dead_letters"] if slots else 0,
                "dead_letters": slots[0]["dead_letters"] if slots else 0,  # deprecated
                "pending_events": sum(s["pending_events"] for s in slot_status),
                "lag_s": max((s["lag_s"] for s in slot_status), default=0.0),
                "slot_status": slot_status,
                "http_leases": [le for le in leases if le["group_name"] == g["name"]],
            }
        )
    return out


def _age(now: datetime, then: datetime | None) -> float:
    return 0.0 if then is None else max((now - then).total_seconds(), 0.0)


async def _require_subscription_post(request: Request, who: Caller, sid: int | None) -> None:
    """403 unless the key may post to the group of subscription ``sid`` (404 when unknown).

    An event sent to one subscription skips that subscription's condition: the topic's scope
    alone would let a key write into any group's subscriptions (their ids are sequential).
    """
    if sid is not None:
        row = await state_of(request).listeners.subscription(sid)
        require(who, "streams", "post", row["group_name"])


# A retry of a remembered Idempotency-Key answers 200 (nothing stored), a first publish 201.
_RETRIED: dict[int | str, dict[str, Any]] = {
    200: {"model": Published, "description": "a retry: nothing stored, the first publish's ids"}
}
_KEY_DOC = (
    "publish at most once per key and topic within streams.idempotency_window (24 hours "
    "unless set): a retry with the key stores nothing and answers 200 with the first ids"
)
IdempotencyHeader = Annotated[
    IdempotencyKey | None, Header(alias="Idempotency-Key", description=_KEY_DOC)
]


@router.post("/events", response_model=Published, status_code=201, responses=_RETRIED)
async def publish(
    request: Request,
    body: PublishIn,
    who: Caller,
    response: Response,
    idempotency_key: IdempotencyHeader = None,
) -> Any:
    """Publish one event; readable once the answer is sent."""
    require(who, "streams", "post", body.topic)
    await _require_subscription_post(request, who, body.subscription_id)
    if idempotency_key is not None:
        return await _publish_once(
            request, response, body, [body.payload], [body.key], [body.headers], idempotency_key
        )
    async with state_of(request).pool.connection() as conn:
        event_id = await client_async.publish(
            conn,
            body.topic,
            body.payload,
            key=body.key,
            headers=body.headers,
            subscription_id=body.subscription_id,
            delayed_until=body.delayed_until,
        )
    return {"ids": [event_id]}


@router.post("/events/batch", response_model=Published, status_code=201, responses=_RETRIED)
async def publish_batch(
    request: Request,
    body: PublishBatchIn,
    who: Caller,
    response: Response,
    idempotency_key: IdempotencyHeader = None,
) -> Any:
    """Publish events of one topic in one statement; all or none."""
    require(who, "streams", "post", body.topic)
    await _require_subscription_post(request, who, body.subscription_id)
    payloads = [e.payload for e in body.events]
    keys = [e.key for e in body.events]
    headers = [e.headers for e in body.events]
    if idempotency_key is not None:
        return await _publish_once(
            request, response, body, payloads, keys, headers, idempotency_key
        )
    async with state_of(request).pool.connection() as conn:
        ids = await client_async.publish_batch(
            conn,
            body.topic,
            payloads,
            keys=keys,
            headers=headers,
            subscription_id=body.subscription_id,
            delayed_until=body.delayed_until,
        )
    return {"ids": ids}


async def _publish_once(
    request: Request,
    response: Response,
    body: PublishIn | PublishBatchIn,
    payloads: list[Any],
    keys: list[str | None],
    headers: list[dict[str, Any] | None],
    idempotency_key: str,
) -> dict[str, Any]:
    """Publish with an Idempotency-Key: 201 when stored, 200 when the key was remembered."""
    async with state_of(request).pool.connection() as conn:
        once = await client_async.publish_once(
            conn,
            body.topic,
            payloads,
            idempotency_key=idempotency_key,
            keys=keys,
            headers=headers,
            subscription_id=body.subscription_id,
            delayed_until=body.delayed_until,
        )
    if once.duplicate:
        response.status_code = 200
    return {"ids": once.ids, "duplicate": once.duplicate}


@router.get("/groups", response_model=list[GroupOut])
async def list_groups(request: Request, who: Caller) -> Any:
    """Consumer groups the key may read, with lag per slot."""
    async with state_of(request).pool.connection() as conn:
        groups = await _groups(conn, None)
    return [g for g in groups if who.can("streams", "read", g["name"])]


@router.post(
    "/groups",
    response_model=GroupOut,
    status_code=201,
    responses={200: {"model": GroupOut, "description": "the group existed"}},
)
async def create_group(request: Request, body: GroupCreate, who: Caller, response: Response) -> Any:
    """Create a consumer group at ``start`` with ``slots`` parallel slots."""
    require(who, "streams", "write", body.group)

    async def run(conn: Conn) -> tuple[bool, list[dict[str, Any]]]:
        existing = await _groups(conn, body.group)
        if existing:
            return False, existing
        try:
            await client_async.create_group(conn, body.group, start=body.start, slots=body.slots)
        except AlreadyExists:  # a concurrent create won: the same answer as finding it
            await conn.rollback()
            return False, await _groups(conn, body.group)
        await conn.commit()
        return True, await _groups(conn, body.group)

    async with state_of(request).pool.connection() as conn:
        created, groups = await run(conn)
    if not created:
        response.status_code = 200
    return groups[0]


@router.get("/groups/{group}", response_model=GroupOut)
async def get_group(request: Request, group: Group, who: Caller) -> Any:
    """A group with its slots' positions, unread events and lag."""
    require(who, "streams", "read", group)
    async with state_of(request).pool.connection() as conn:
        groups = await _groups(conn, group)
    if not groups:
        raise HTTPException(404, f"consumer group {group!r} does not exist")
    return groups[0]


@router.post("/groups/{group}/seek", response_model=GroupOut)
async def seek(request: Request, group: Group, body: SeekIn, who: Caller) -> Any:
    """Reposition the group ('beginning', 'now', a time, an event id); ends its HTTP leases."""
    require(who, "streams", "write", group)

    async with state_of(request).pool.connection() as conn:
        await client_async.seek(conn, group, body.start)
        await conn.execute(query("stream_leases_clear"), {"group": group})
        await conn.commit()
        return (await _groups(conn, group))[0]


@router.post("/groups/{group}/read", response_model=ReadOut)
async def read(request: Request, group: Group, body: ReadIn, who: Caller) -> Any:
    """Lease the group's (slot's) next batch: events and a token for ``commit``.

    At least once: if the token is not committed before ``lease_until``, the next read returns
    the same events. While the lease lives, other reads of the slot get 409.
    """
    require(who, "streams", "consume", group)
    params = {
        "group": group,
        "max_events": body.limit,
        "slot": body.slot,
        "lease": timedelta(seconds=body.lease_s),
        "client_id": who.client_id,
    }
    rows = await state_of(request).rows(query("stream_read"), params)
    if not rows:
        return {"token": None, "lease_until": None, "cursor": None, "events": []}
    return {
        "token": rows[0]["token"],
        "lease_until": rows[0]["lease_until"],
        "cursor": rows[0]["cursor"],
        "events": rows,
    }


@router.post("/groups/{group}/commit", response_model=Committed)
async def commit(request: Request, group: Group, body: CommitIn, who: Caller) -> Any:
    """Acknowledge a leased batch: the group moves past it (409 when the lease was lost)."""
    require(who, "streams", "consume", group)
    cursor = await state_of(request).value(
        query("stream_commit"), {"group": group, "token": body.token}
    )
    return {"cursor": cursor}


@router.post("/groups/{group}/extend", response_model=ReadOut)
async def extend(request: Request, group: Group, body: ExtendIn, who: Caller) -> Any:
    """Make a live read lease end ``lease_s`` seconds from now (409 when it ended)."""
    require(who, "streams", "consume", group)
    params = {"group": group, "token": body.token, "lease": timedelta(seconds=body.lease_s)}
    until = await state_of(request).value(query("stream_extend"), params)
    return {"token": body.token, "lease_until": until, "cursor": None, "events": []}


@router.get("/groups/{group}/dmq", response_model=list[DeadLetter])
@router.get(
    "/groups/{group}/dead-letters",
    response_model=list[DeadLetter],
    deprecated=True,
    summary="Deprecated spelling of GET /v1/streams/groups/{group}/dmq",
)
async def dmq(request: Request, group: Group, who: Caller) -> Any:
    """The group's dead messages (events that used up their attempts), oldest first."""
    require(who, "streams", "read", group)

    async with state_of(request).pool.connection() as conn:
        if not await agroup_exists(conn, group):
            raise HTTPException(404, f"consumer group {group!r} does not exist")
        return await client_async.dmq(conn, group)


@router.post("/groups/{group}/dmq/{event_id}/replay", status_code=204)
@router.post(
    "/groups/{group}/dead-letters/{event_id}/replay",
    status_code=204,
    deprecated=True,
    summary="Deprecated spelling of POST /v1/streams/groups/{group}/dmq/{event_id}/replay",
)
async def dmq_replay(request: Request, group: Group, event_id: int, who: Caller) -> Response:
    """Give a dead event a fresh set of attempts (it comes back through the retry path)."""
    require(who, "streams", "write", group)

    async with state_of(request).pool.connection() as conn:
        await client_async.dmq_replay(conn, group, event_id)
    return Response(status_code=204)


KEEPALIVE_S = 15.0


def _subscription_out(row: dict[str, Any]) -> dict[str, Any]:
    expires = row["expires_after"]
    return {
        "id": row["id"],
        "group": row["group_name"],
        "condition": row["condition"],
        "params": row["params"],
        "expires_after_s": None if expires is None else expires.total_seconds(),
    }


@router.post("/groups/{group}/subscriptions", response_model=SubscriptionOut, status_code=201)
async def subscribe(request: Request, group: Group, body: SubscriptionIn, who: Caller) -> Any:
    """The group's subscription with this condition and params, created when new.

    Identical (group, condition, params) subscriptions are one: a hundred browsers on one chat
    room get the same id, and ``pgmbus serve`` reads its events once for all of them. With
    ``expires_after_s`` it is removed (by ``maintain``) once it has had no listener that long.
    """
    require(who, "streams", "consume", group)
    hub = state_of(request).listeners
    expires = None if body.expires_after_s is None else timedelta(seconds=body.expires_after_s)
    sid = await hub.subscribe(group, body.condition, body.params, expires)
    return _subscription_out(await hub.subscription(sid))


@router.get(
    "/subscriptions/{subscription_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "Server-Sent Events"},
        429: {"model": ErrorBody, "description": "the API key holds too many listeners"},
    },
)
async def listen(request: Request, subscription_id: int, who: Caller) -> StreamingResponse:
    """Server-Sent Events: the subscription's events from now on, as they commit.

    Fire and forget: one frame per event (``id`` = event id, ``data`` = the event as JSON with
    ``subscription_id``), a comment every 15 s when idle; no group's cursor moves and no
    reliable reader waits for a listener. A client that falls behind by more than
    ``max_listener_bytes`` of frames (256 KiB by default) or 10,000 frames gets
    ``event: overflow`` and is disconnected; ``event: end`` when the subscription is removed.
    An API key holds at most ``max_listeners_per_key`` listeners (500): one more is a 429.
    """
    hub = state_of(request).listeners
    row = await hub.subscription(subscription_id)
    require(who, "streams", "read", row["group_name"])
    try:
        listener = await hub.add(subscription_id, who.client_id)
    except TooManyListeners as exc:
        raise HTTPException(429, exc.message) from exc
    return StreamingResponse(
        stream(hub, listener, KEEPALIVE_S),
        media_type="text/event-stream",
        headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
    )
