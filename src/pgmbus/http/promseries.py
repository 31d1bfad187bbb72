"""The dashboard's charts read from Prometheus: the series ``/metrics`` exports, last hour.

When the service is given a Prometheus (``ServiceConfig.prometheus_url``), the chart series of
queues and stream groups come from its ``/api/v1/query_range`` over the last hour, in the shape
:mod:`pgmbus.http.samples` gives, so the page draws either. Every service replica exports the
same database figures, so each query takes the ``max`` over the scraped processes (as the
Grafana board does). Names reach PromQL only as string literals (:func:`literal`).

Timer clients have no per-client series in ``/metrics``: their charts stay on the samples.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

log = logging.getLogger(__name__)

WINDOW_S = 3600.0
# a chart is 320 px wide: more points than this draw nothing more
MAX_POINTS = 240
STEP_S = float(math.ceil(WINDOW_S / MAX_POINTS))

# field -> PromQL over one queue, by consumer; {q} is the queue's literal, {r} the rate window
_QUEUE_QUERIES = {
    "depth": "max by (consumer) (pgmbus_queue_depth{{queue={q}}})",
    "posted_per_s": (
        "max by (consumer) (rate(pgmbus_queue_consumer_posted_total{{queue={q}}}[{r}s]))"
    ),
    "consumed_per_s": (
        "max by (consumer) (rate(pgmbus_queue_consumer_consumed_total{{queue={q}}}[{r}s]))"
    ),
    # a gauge (replays lower it): its growth per second, never negative
    "dead_per_s": (
        "max by (consumer) "
        "(clamp_min(deriv(pgmbus_queue_consumer_dead_messages{{queue={q}}}[{r}s]), 0))"
    ),
}
_GROUP_QUERIES = {
    "unread": "max by (slot) (pgmbus_stream_group_pending_events{{group={g}}})",
    "lag_s": "max by (slot) (pgmbus_stream_group_lag_seconds{{group={g}}})",
}
_COUNTS = ("depth", "unread")


class PrometheusUnavailable(Exception):
    """Prometheus did not answer a chart's queries usefully; the message says how."""


def literal(value: str) -> str:
    """``value`` as a PromQL string literal.

    JSON's escaping of a string (quote, backslash, control characters; other characters as
    they are, so no surrogate escapes) is a subset of PromQL's Go-style escapes: the literal
    reads back as exactly ``value`` and never ends before it.
    """
    return json.dumps(value, ensure_ascii=False)


def _value(text: str, field: str) -> float | int | None:
    number = float(text)
    if not math.isfinite(number):
        return None
    return int(number) if field in _COUNTS else round(number, 3)


@dataclass
class Prometheus:
    """The Prometheus at ``url`` (a path prefix allowed), asked with a ``timeout_s`` bound."""

    url: str
    timeout_s: float = 5.0
    rate_window_s: float = 120.0
    failing: bool = field(default=False, repr=False)
    # one client for the service's life: making one costs more than the queries (its TLS
    # context); made on first use, on the serving event loop
    client: httpx.AsyncClient | None = field(default=None, init=False, repr=False)

    async def aclose(self) -> None:
        """Close the HTTP client (the service stopping)."""
        if self.client is not None:
            await self.client.aclose()
            self.client = None

    def frame(self) -> dict[str, Any]:
        """The fields every Prometheus-drawn answer carries."""
        return {
            "every_s": STEP_S,
            "window_s": WINDOW_S,
            "rate_window_s": self.rate_window_s,
            "source": "prometheus",
        }

    async def queue(self, qname: str) -> list[dict[str, Any]]:
        """Per consumer of ``qname``: depth, posted/s, consumed/s and dead/s over the hour."""
        by_consumer = await self._series(
            {f: q.format(q=literal(qname), r=self._r()) for f, q in _QUEUE_QUERIES.items()},
            "consumer",
        )
        return [
            {"consumer": name, "points": _points(rows, tuple(_QUEUE_QUERIES))}
            for name, rows in sorted(by_consumer.items())
        ]

    async def group(self, name: str) -> list[dict[str, Any]]:
        """Per slot of stream group ``name``: unread events and lag over the hour."""
        by_slot = await self._series(
            {f: q.format(g=literal(name)) for f, q in _GROUP_QUERIES.items()}, "slot"
        )
        slots = sorted((int(slot), rows) for slot, rows in by_slot.items() if slot.isdigit())
        return [
            {"slot": slot, "points": _points(rows, tuple(_GROUP_QUERIES))} for slot, rows in slots
        ]

    def _r(self) -> str:
        return f"{math.ceil(self.rate_window_s)}"

    async def _series(
        self, queries: dict[str, str], label: str
    ) -> dict[str, dict[float, dict[str, Any]]]:
        """Run ``queries`` (field -> PromQL) over the hour; label value -> time -> fields."""
        # in whole milliseconds, so that the last point falls on ``end`` (now) exactly
        end_ms = int(time.time() * 1000)
        params = {
            "start": _seconds(end_ms - int(WINDOW_S * 1000)),
            "end": _seconds(end_ms),
            "step": f"{STEP_S:g}",
        }
        if self.client is None:
            self.client = httpx.AsyncClient(timeout=self.timeout_s)
        try:
            answers = await asyncio.gather(
                *(self._range(self.client, promql, params) for promql in queries.values())
            )
        except PrometheusUnavailable as exc:
            self._failed(str(exc))
            raise
        except httpx.HTTPError as exc:
            reason = f"Prometheus did not answer ({type(exc).__name__})"
            self._failed(f"{reason}: {exc}")
            raise PrometheusUnavailable(reason) from exc
        if self.failing:
            log.info("Prometheus answers again: charts drawn from it")
        self.failing = False
        out: dict[str, dict[float, dict[str, Any]]] = {}
        try:
            for fname, result in zip(queries, answers, strict=True):
                for series in result:
                    rows = out.setdefault(str(series["metric"].get(label, "")), {})
                    for at, text in series["values"]:
                        rows.setdefault(float(at), {})[fname] = _value(str(text), fname)
        except (KeyError, TypeError, ValueError) as exc:
            reason = "Prometheus answered series of an unexpected shape"
            self._failed(f"{reason}: {exc!r}")
            raise PrometheusUnavailable(reason) from exc
        return out

    async def _range(
        self, client: httpx.AsyncClient, promql: str, params: dict[str, str]
    ) -> list[dict[str, Any]]:
        response = await client.post(
            f"{self.url.rstrip('/')}/api/v1/query_range",
            data={**params, "query": promql, "timeout": f"{self.timeout_s:g}s"},
        )
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code != 200 or not isinstance(body, dict):
            raise PrometheusUnavailable(f"Prometheus answered HTTP {response.status_code}")
        data = body.get("data")
        if body.get("status") != "success" or not isinstance(data, dict):
            raise PrometheusUnavailable(f"Prometheus answered {body.get('errorType', 'an error')}")
        result = data.get("result")
        if data.get("resultType") != "matrix" or not isinstance(result, list):
            raise PrometheusUnavailable("Prometheus answered no range of series")
        return result

    def _failed(self, detail: str) -> None:
        # logged once per run of failures: the page asks every few seconds
        if not self.failing:
            log.warning("charts fall back to the service's samples: %s", detail)
        self.failing = True


def _seconds(ms: int) -> str:
    return f"{ms // 1000}.{ms % 1000:03d}"


def _points(rows: dict[float, dict[str, Any]], fields: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{"at": at, **{f: values.get(f) for f in fields}} for at, values in sorted(rows.items())]
