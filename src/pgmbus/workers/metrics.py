"""The worker's Prometheus metrics, per handler: call durations, calls in flight, outcomes.

Served on the health port's ``/metrics``. Each series carries ``engine`` (``queues`` or
``streams``), ``handler`` (``module.qualname``) and ``queue`` or ``group`` (the other one is
empty, which Prometheus reads as absent).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from pgmbus.handlers import QueueHandler, StreamHandler
from pgmbus.queues.reports import Meter

LABELS = ("engine", "handler", "queue", "group")
# from a fast handler's millisecond to a long job's minutes
BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
CONTENT_TYPE = CONTENT_TYPE_LATEST


class WorkerMetrics:
    """One registry for every handler of a worker process (kept across its runs)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.duration = Histogram(
            "pgmbus_worker_handler_duration_seconds",
            "Seconds a handler call took, successes and failures (timeouts included).",
            LABELS,
            buckets=BUCKETS,
            registry=r,
        )
        self.in_flight = Gauge(
            "pgmbus_worker_in_flight", "Handler calls running now.", LABELS, registry=r
        )
        self.successes = Counter(
            "pgmbus_worker_successes_total", "Handler calls that returned.", LABELS, registry=r
        )
        self.failures = Counter(
            "pgmbus_worker_failures_total",
            "Handler calls that raised or timed out.",
            LABELS,
            registry=r,
        )
        self.retries = Counter(
            "pgmbus_worker_retries_total",
            "Failed messages or events handed back for another attempt.",
            LABELS,
            registry=r,
        )
        self.dead = Counter(
            "pgmbus_worker_dead_lettered_total",
            "Failed messages or events sent to the dead letters.",
            LABELS,
            registry=r,
        )
        self.killed = Counter(
            "pgmbus_worker_killed_total",
            "Handler child processes killed past their time limit (pool 'process').",
            LABELS,
            registry=r,
        )

    def queue(self, spec: QueueHandler) -> Meter:
        """The meter of a queue handler."""
        return HandlerMeter(self, ("queues", spec.name, spec.queue, ""))

    def stream(self, spec: StreamHandler) -> Meter:
        """The meter of a stream handler (all its slots)."""
        return HandlerMeter(self, ("streams", spec.name, "", spec.group))

    def exposition(self) -> bytes:
        """The text format of every series."""
        return generate_latest(self.registry)


class HandlerMeter(Meter):
    """The series of one handler, made at once: a scrape shows them at zero before any work."""

    def __init__(self, metrics: WorkerMetrics, labels: tuple[str, str, str, str]) -> None:
        self._duration = metrics.duration.labels(*labels)
        self._in_flight = metrics.in_flight.labels(*labels)
        self._successes = metrics.successes.labels(*labels)
        self._failures = metrics.failures.labels(*labels)
        self._retries = metrics.retries.labels(*labels)
        self._dead = metrics.dead.labels(*labels)
        self._killed = metrics.killed.labels(*labels)

    def started(self) -> None:
        self._in_flight.inc()

    def ended(self, seconds: float | None, failed: bool) -> None:
        self._in_flight.dec()
        if seconds is None:
            return
        self._duration.observe(seconds)
        (self._failures if failed else self._successes).inc()

    def retried(self) -> None:
        self._retries.inc()

    def buried(self) -> None:
        self._dead.inc()

    def killed(self) -> None:
        self._killed.inc()


__all__ = ["CONTENT_TYPE", "HandlerMeter", "WorkerMetrics"]
