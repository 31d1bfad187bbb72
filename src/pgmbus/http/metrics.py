"""``/metrics``: a Prometheus collector that reads one SQL snapshot per scrape.

The snapshot is the named query ``snapshot`` of ``sql/http.sql``: one statement, one round
trip, whatever the number of queues, groups or clients. docs/operations.md lists the series.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

from pgmbus.data import replication
from pgmbus.data import service as service_data
from pgmbus.http.call_totals import OUTCOMES, CallTotals
from pgmbus.http.sample_read import UNREADABLE, bound_lock_waits, each_queue

log = logging.getLogger("pgmbus.http.metrics")

LATENESS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
SAGA_STATES = ("running", "completed", "compensating", "compensated")
TIMER_STATUSES = ("pending", "notified", "failed", "cancelled", "rejected")

_QUEUE_GAUGES = {
    "depth": ("pgmbus_queue_depth", "Deliveries waiting for the consumer (all states)."),
    "ready": ("pgmbus_queue_ready", "Deliveries the consumer can claim now."),
    "delayed": ("pgmbus_queue_delayed", "Deliveries not yet due (delayed or nacked with delay)."),
    "leased": ("pgmbus_queue_leased", "Deliveries under a live lease."),
    "expired": ("pgmbus_queue_expired", "Deliveries past their expiry, awaiting removal."),
    "oldest_age": (
        "pgmbus_queue_oldest_ready_age_seconds",
        "Age of the oldest ready delivery (0 when none is ready).",
    ),
    "dmq": (
        "pgmbus_queue_consumer_dead_messages",
        "Dead messages of the queue that name this consumer.",
    ),
    "dmq_unreported": (
        "pgmbus_queue_consumer_dead_unreported",
        "Of those, messages that died at max_attempts because their last delivery never "
        "reported (ack lost, worker killed), not because a handler failed.",
    ),
    "paused": (
        "pgmbus_queue_paused",
        "1 while the consumer or its queue is paused (nothing is claimed), else 0.",
    ),
}
# Counters: sequences (not transactional, a rolled-back post or consume still counts) and the
# consumer's stored selector_errors. No per-queue consumed total: a sum over consumers goes down
# when a consumer is dropped; sum the consumers' rates instead.
_CONSUMER_COUNTERS = {
    "posted": ("pgmbus_queue_consumer_posted", "Deliveries made for the consumer."),
    "consumed": (
        "pgmbus_queue_consumer_consumed",
        "Deliveries the consumer consumed (consume, consumen, ack of a lease).",
    ),
    "selector_errors": (
        "pgmbus_queue_selector_errors",
        "Copies for this consumer sent to the dead-message queue because its selector raised.",
    ),
}
_GROUP_GAUGES = {
    "pending": ("pgmbus_stream_group_pending_events", "Committed events the slot has not read."),
    "lag_seconds": (
        "pgmbus_stream_group_lag_seconds",
        "Age of the slot's oldest unread event (0 when caught up).",
    ),
    "committed_age": (
        "pgmbus_stream_group_commit_age_seconds",
        "Seconds since the slot's position last moved.",
    ),
}


Fetch = Callable[[int | None], dict[str, Any]]


def fetch_snapshot(
    conn: psycopg.Connection[Any],
    *,
    late_after_s: float,
    window_s: float,
    after_xid: int | None = None,
) -> dict[str, Any]:
    """Run the snapshot query on ``conn`` (one round trip) and return its JSON document.

    ``after_xid`` is the previous snapshot's ``calls.horizon`` (None on the first scrape: no
    calls are counted, only the horizon is taken).
    """
    snapshot = service_data.snapshot(conn, _params(late_after_s, window_s, after_xid))
    if snapshot is not None:
        snapshot["replication"] = replication.replication_state(conn)
    conn.rollback()
    if snapshot is None:
        raise RuntimeError("the snapshot query returned no row")
    return snapshot


async def afetch_snapshot(
    conn: psycopg.AsyncConnection[Any],
    *,
    late_after_s: float,
    window_s: float,
    after_xid: int | None = None,
) -> dict[str, Any]:
    """:func:`fetch_snapshot` on an asyncio connection (the service's pool).

    A queue whose table stays locked is left out rather than holding back the scrape
    (:mod:`pgmbus.http.sample_read`).
    """
    params = _params(late_after_s, window_s, after_xid)
    await bound_lock_waits(conn)
    try:
        async with conn.transaction():
            snapshot = await service_data.asnapshot(conn, params)
    except UNREADABLE:  # some queue cannot be read now: read them one by one
        snapshot = await service_data.asnapshot(conn, {**params, "with_queues": False})
        if snapshot is not None:
            snapshot["queues"], _ = await each_queue(conn, "snapshot_queue")
    if snapshot is not None:
        snapshot["replication"] = await replication.areplication_state(conn)
    await conn.rollback()
    if snapshot is None:
        raise RuntimeError("the snapshot query returned no row")
    return snapshot


def _params(late_after_s: float, window_s: float, after_xid: int | None) -> dict[str, Any]:
    return {
        "late_s": late_after_s,
        "window_s": window_s,
        "buckets": list(LATENESS_BUCKETS),
        "after_xid": after_xid,
    }


class SnapshotCollector(Collector):
    """Yield every pgmbus series from one snapshot taken by ``fetch`` at each scrape.

    The timers' call counters are this object's running totals (``CallTotals``); scrapes are
    serialized so that two concurrent ones never add the same calls twice.
    """

    def __init__(self, fetch: Fetch) -> None:
        self.fetch = fetch
        self.calls = CallTotals(len(LATENESS_BUCKETS))
        self.lock = threading.Lock()

    def describe(self) -> list[Metric]:
        """Nothing up front: describing would cost a snapshot at registration."""
        return []

    def collect(self) -> Iterator[Metric]:
        """Take the snapshot and yield the families (``pgmbus_up`` 0 when it failed)."""
        started = time.perf_counter()
        up = GaugeMetricFamily("pgmbus_up", "1 when the last snapshot query succeeded.")
        try:
            with self.lock:
                snap = self.fetch(self.calls.horizon)
                self.calls.add(snap["calls"])
        except Exception as exc:  # a scrape must answer; the failure shows as pgmbus_up 0
            log.warning("metrics snapshot failed: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from _queues(snap)
        yield from _streams(snap)
        yield from _timers(snap)
        yield from _calls(self.calls)
        yield from _replication(snap.get("replication") or {})
        sagas = GaugeMetricFamily("pgmbus_sagas", "Sagas by state.", labels=["state"])
        for state in SAGA_STATES:
            sagas.add_metric([state], snap["sagas"].get(state, 0))
        yield sagas
        took = GaugeMetricFamily(
            "pgmbus_scrape_duration_seconds", "Seconds the snapshot query and its encoding took."
        )
        took.add_metric([], time.perf_counter() - started)
        yield took


def _queues(snap: dict[str, Any]) -> Iterator[Metric]:
    for key, (name, doc) in _QUEUE_GAUGES.items():
        family = GaugeMetricFamily(name, doc, labels=["queue", "consumer"])
        for row in snap["queues"]:
            family.add_metric([row["queue"], row["consumer"]], float(row[key]))
        yield family
    for key, (name, doc) in _CONSUMER_COUNTERS.items():
        counter = CounterMetricFamily(name, doc, labels=["queue", "consumer"])
        for row in snap["queues"]:
            counter.add_metric([row["queue"], row["consumer"]], row[key])
        yield counter
    posted = CounterMetricFamily(
        "pgmbus_queue_posted", "Messages posted to the queue.", labels=["queue"]
    )
    for row in snap["queue_totals"]:
        posted.add_metric([row["queue"]], row["posted"])
    yield posted
    dmq = GaugeMetricFamily(
        "pgmbus_queue_dead_messages",
        "Messages of the queue in the dead-message queue.",
        labels=["queue"],
    )
    for row in snap["dmq"]:
        dmq.add_metric([row["queue"]], row["messages"])
    yield dmq


def _streams(snap: dict[str, Any]) -> Iterator[Metric]:
    groups = snap["groups"]
    for key, (name, doc) in _GROUP_GAUGES.items():
        family = GaugeMetricFamily(name, doc, labels=["group", "slot"])
        for row in groups:
            family.add_metric([row["group"], str(row["slot"])], row[key])
        yield family
    retries = GaugeMetricFamily(
        "pgmbus_stream_group_retries", "Events of the group on the retry path.", labels=["group"]
    )
    dead = GaugeMetricFamily(
        "pgmbus_stream_group_dead_messages",
        "Events of the group in its dead-message queue (dmq).",
        labels=["group"],
    )
    old_dead = GaugeMetricFamily(
        "pgmbus_stream_group_dead_letters",
        "Deprecated name of pgmbus_stream_group_dead_messages.",
        labels=["group"],
    )
    expired = GaugeMetricFamily(
        "pgmbus_stream_group_expired",
        "1 when the group was expired for lagging past max_lag.",
        labels=["group"],
    )
    seen: set[str] = set()
    for row in groups:
        if row["group"] in seen:
            continue
        seen.add(row["group"])
        retries.add_metric([row["group"]], row["retries"])
        dead.add_metric([row["group"]], row["dead_letters"])
        old_dead.add_metric([row["group"]], row["dead_letters"])
        expired.add_metric([row["group"]], 1 if row["state"] == "expired" else 0)
    yield from (retries, dead, old_dead, expired)
    counters = CounterMetricFamily(
        "pgmbus_streams_events",
        "Noteworthy stream events by kind (mbus.stream_counters).",
        labels=["kind"],
    )
    for kind, value in sorted(snap["stream_counters"].items()):
        counters.add_metric([kind], value)
    yield counters
    parts = snap["partitions"]
    partitions = GaugeMetricFamily(
        "pgmbus_stream_partitions", "Partitions of mbus.events by state.", labels=["state"]
    )
    partitions.add_metric(["open"], parts["open"])
    partitions.add_metric(["closed"], parts["total"] - parts["open"])
    yield partitions
    oldest = GaugeMetricFamily(
        "pgmbus_stream_oldest_closed_partition_age_seconds",
        "Seconds since the oldest kept closed partition closed (what retention holds).",
    )
    oldest.add_metric([], parts["oldest_closed_age"])
    yield oldest


def _replication(state: dict[str, Any]) -> Iterator[Metric]:
    yield _gauge(
        "pgmbus_server_in_recovery",
        "1 on a hot standby (read-only), 0 on a primary.",
        1 if state.get("in_recovery") else 0,
    )
    standbys = state.get("standbys") or []
    yield _gauge(
        "pgmbus_replication_synchronous_standbys",
        "Standbys connected now whose confirmation a commit waits for (sync or quorum).",
        sum(1 for s in standbys if s.get("sync_state") in ("sync", "quorum")),
    )
    lag = GaugeMetricFamily(
        "pgmbus_replication_replay_lag_seconds",
        "Per standby connected to this primary, how long its replay trails the commits.",
        labels=["standby", "sync_state"],
    )
    for s in standbys:
        lag.add_metric([str(s["name"]), str(s["sync_state"])], float(s["replay_lag_s"] or 0))
    yield lag
    if state.get("in_recovery"):
        delay = state.get("replay_delay_s")
        yield _gauge(
            "pgmbus_standby_replay_delay_seconds",
            "On a standby: seconds since the last transaction it replayed was committed.",
            float(delay) if delay is not None else float("nan"),
        )


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc)
    family.add_metric([], value)
    return family


def _timers(snap: dict[str, Any]) -> Iterator[Metric]:
    t = snap["timers"]
    by_status = GaugeMetricFamily(
        "pgmbus_timer_callbacks", "Stored callbacks by status.", labels=["status"]
    )
    for status in TIMER_STATUSES:
        by_status.add_metric([status], t["by_status"].get(status, 0))
    yield by_status
    yield _gauge("pgmbus_timer_due", "Pending callbacks whose run_at has passed.", t["due"])
    yield _gauge(
        "pgmbus_timer_late",
        "Pending callbacks due for longer than the service's late_after_s.",
        t["late"],
    )
    yield _gauge(
        "pgmbus_timer_oldest_due_age_seconds",
        "Seconds the oldest due pending callback has waited (0 when none).",
        t["oldest_due_age"],
    )
    yield _gauge(
        "pgmbus_timer_dispatchers",
        "Dispatchers with a heartbeat in the last minute.",
        t["dispatchers"],
    )
    yield _gauge("pgmbus_timer_buckets", "Buckets callbacks are spread over.", t["buckets"])
    yield _gauge(
        "pgmbus_timer_buckets_leased",
        "Buckets under a live dispatcher lease.",
        t["buckets_leased"],
    )
    schedules = GaugeMetricFamily("pgmbus_timer_schedules", "Schedules by state.", labels=["state"])
    schedules.add_metric(["active"], t["schedules"] - t["schedules_paused"])
    schedules.add_metric(["paused"], t["schedules_paused"])
    yield schedules


def _calls(totals: CallTotals) -> Iterator[Metric]:
    calls = CounterMetricFamily(
        "pgmbus_timer_calls",
        "HTTP calls of callbacks by outcome (ok, reject, error, refused) since this process began.",
        labels=["outcome"],
    )
    for outcome in OUTCOMES:
        calls.add_metric([outcome], totals.outcomes.get(outcome, 0))
    yield calls
    buckets = [(str(le), float(n)) for le, n in zip(LATENESS_BUCKETS, totals.buckets, strict=True)]
    buckets.append(("+Inf", float(totals.count)))
    yield HistogramMetricFamily(
        "pgmbus_timer_lateness_seconds",
        "First-call lateness (start minus originally_run_at) of callbacks, since this process "
        "began.",
        buckets=buckets,
        sum_value=totals.sum,
    )


class ListenerCollector(Collector):
    """The live SSE listeners of this process (numbers from ``ListenerHub.stats``)."""

    def __init__(self, stats: Callable[[], dict[str, int]]) -> None:
        self.stats = stats

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        stats = self.stats()
        listeners = GaugeMetricFamily("pgmbus_sse_listeners", "Live SSE listeners connected now.")
        listeners.add_metric([], stats["listeners"])
        connections = GaugeMetricFamily(
            "pgmbus_sse_connections",
            "Open SSE listener connections of API keys: live, or dropped and not closed yet "
            "(what max_listeners_per_key bounds).",
        )
        connections.add_metric([], stats["connections"])
        queued = GaugeMetricFamily(
            "pgmbus_sse_queued_bytes", "Bytes of SSE frames queued for listeners, not sent yet."
        )
        queued.add_metric([], stats["queued_bytes"])
        dropped = CounterMetricFamily(
            "pgmbus_sse_listeners_dropped",
            "Listeners dropped because they fell behind (max_listener_bytes or 10,000 frames).",
        )
        dropped.add_metric([], stats["dropped"])
        refused = CounterMetricFamily(
            "pgmbus_sse_listeners_refused",
            "Listeners refused (429) because their API key held max_listeners_per_key.",
        )
        refused.add_metric([], stats["refused"])
        yield from (listeners, connections, queued, dropped, refused)


def registry_for(fetch: Fetch, *more: Collector) -> CollectorRegistry:
    """A registry holding the snapshot collector and ``more`` (no process or GC series)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(fetch))
    for collector in more:
        registry.register(collector)
    return registry
