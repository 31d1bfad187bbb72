"""The queues HTTP API's operations: pause, resume and purge a queue or one consumer."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request

from pgmbus.http.auth import Caller, require
from pgmbus.http.errors import ERROR_RESPONSES
from pgmbus.http.queue_models import Name, Paused, Purged, PurgeIn, TargetIn
from pgmbus.http.state import state_of

router = APIRouter(prefix="/v1", tags=["queues"], responses=ERROR_RESPONSES)


@router.post("/queues/{queue}/pause", response_model=Paused)
async def pause(request: Request, queue: Name, body: TargetIn, who: Caller) -> Any:
    """Pause the queue (or ``consumer``): nothing is claimed from it; posts are accepted."""
    require(who, "queues", "write", queue)
    changed = await state_of(request).bus.pause(queue, body.consumer)
    return {"queue": queue, "consumer": body.consumer, "paused": True, "changed": changed}


@router.post("/queues/{queue}/resume", response_model=Paused)
async def resume(request: Request, queue: Name, body: TargetIn, who: Caller) -> Any:
    """Resume the queue (or ``consumer``); waiting consumers are woken."""
    require(who, "queues", "write", queue)
    changed = await state_of(request).bus.resume(queue, body.consumer)
    return {"queue": queue, "consumer": body.consumer, "paused": False, "changed": changed}


@router.post("/queues/{queue}/purge", response_model=Purged)
async def purge(request: Request, queue: Name, body: PurgeIn, who: Caller) -> Any:
    """Delete the pending messages of the queue (or ``consumer``); leased ones stay.
    ``confirm`` must be the queue's name (422 otherwise, nothing purged)."""
    require(who, "queues", "write", queue)
    if body.confirm != queue:
        raise HTTPException(422, f"confirm must be the queue's name {queue!r}: nothing purged")
    return {"purged": await state_of(request).bus.purge(queue, body.consumer)}
