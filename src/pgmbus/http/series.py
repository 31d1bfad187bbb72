"""The dashboard's charts: series of the samples the service keeps (pgmbus.http.samples)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request

from pgmbus.http.auth import Caller, require
from pgmbus.http.errors import ERROR_RESPONSES
from pgmbus.http.samples import Samples

router = APIRouter(prefix="/v1/ops/series", tags=["operations"], responses=ERROR_RESPONSES)


def samples_of(request: Request) -> Samples:
    """The samples of the application serving ``request``."""
    samples: Samples = request.app.state.samples
    return samples


def _frame(samples: Samples, **series: Any) -> dict[str, Any]:
    return {"every_s": samples.every_s, "window_s": samples.window_s, **series}


@router.get("/queues/{qname}")
async def queue_series(request: Request, qname: str, who: Caller) -> dict[str, Any]:
    """Per consumer: depth, posted/s, consumed/s and dead/s over the service's window."""
    require(who, "queues", "read", qname)
    return _frame(samples_of(request), consumers=samples_of(request).queue(qname))


@router.get("/streams/{group}")
async def group_series(request: Request, group: str, who: Caller) -> dict[str, Any]:
    """Per slot of a stream group: unread events and lag (seconds) over the window."""
    require(who, "streams", "read", group)
    return _frame(samples_of(request), slots=samples_of(request).group(group))


@router.get("/timers/{client}")
async def timer_series(request: Request, client: str, who: Caller) -> dict[str, Any]:
    """A timer client's due and late callbacks, lateness and failed/s over the window."""
    if client != who.name and not who.can("timers", "read", client):
        raise HTTPException(403, f"the API key has no scope allowing timers:read on {client!r}")
    return _frame(samples_of(request), points=samples_of(request).timers(client))
