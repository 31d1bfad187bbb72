"""The dashboard's charts: series of the samples the service keeps (pgmbus.http.samples), or
of Prometheus when one is configured (pgmbus.http.promseries), falling back to the samples."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request

from pgmbus.http.auth import Caller, require
from pgmbus.http.errors import ERROR_RESPONSES
from pgmbus.http.promseries import Prometheus, PrometheusUnavailable
from pgmbus.http.samples import Samples

router = APIRouter(prefix="/v1/ops/series", tags=["operations"], responses=ERROR_RESPONSES)


def samples_of(request: Request) -> Samples:
    """The samples of the application serving ``request``."""
    samples: Samples = request.app.state.samples
    return samples


def prometheus_of(request: Request) -> Prometheus | None:
    """The Prometheus the application draws its charts from, if any."""
    prometheus: Prometheus | None = getattr(request.app.state, "prometheus", None)
    return prometheus


def _frame(samples: Samples, **series: Any) -> dict[str, Any]:
    return {"every_s": samples.every_s, "window_s": samples.window_s, "source": "samples", **series}


@router.get("/queues/{qname}")
async def queue_series(request: Request, qname: str, who: Caller) -> dict[str, Any]:
    """Per consumer: depth, posted/s, consumed/s and dead/s over the last hour.

    ``source`` says where they come from: ``prometheus``, or ``samples`` (the service's own;
    with ``prometheus_error`` when a configured Prometheus failed to answer).
    """
    require(who, "queues", "read", qname)
    samples, prometheus = samples_of(request), prometheus_of(request)
    if prometheus is None:
        return _frame(samples, consumers=samples.queue(qname))
    try:
        return {**prometheus.frame(), "consumers": await prometheus.queue(qname)}
    except PrometheusUnavailable as exc:
        return _frame(samples, consumers=samples.queue(qname), prometheus_error=str(exc))


@router.get("/streams/{group}")
async def group_series(request: Request, group: str, who: Caller) -> dict[str, Any]:
    """Per slot of a stream group: unread events and lag (seconds) over the last hour.

    ``source`` as for queues.
    """
    require(who, "streams", "read", group)
    samples, prometheus = samples_of(request), prometheus_of(request)
    if prometheus is None:
        return _frame(samples, slots=samples.group(group))
    try:
        return {**prometheus.frame(), "slots": await prometheus.group(group)}
    except PrometheusUnavailable as exc:
        return _frame(samples, slots=samples.group(group), prometheus_error=str(exc))


@router.get("/timers/{client}")
async def timer_series(request: Request, client: str, who: Caller) -> dict[str, Any]:
    """A timer client's due and late callbacks, lateness and failed/s over the window.

    Always from the service's samples: ``/metrics`` has no per-client timer series.
    """
    if client != who.name and not who.can("timers", "read", client):
        raise HTTPException(403, f"the API key has no scope allowing timers:read on {client!r}")
    return _frame(samples_of(request), points=samples_of(request).timers(client))
