"""Running totals of the timers' HTTP calls, kept by the process that serves ``/metrics``.

``mbus.timer_attempts`` loses rows to upkeep, so a count over it goes down; a Prometheus counter
must not. Each scrape's snapshot reports only the attempts committed since the previous scrape
(the ``calls`` part of ``sql/http.sql`` 'snapshot', bounded by transaction-id horizons) and this
object adds them up. A restart starts the totals at 0, which Prometheus reads as a counter reset.
"""

from __future__ import annotations

from typing import Any

OUTCOMES = ("ok", "reject", "error", "refused")


class CallTotals:
    """Calls by outcome and a cumulative first-call lateness histogram since the process began."""

    def __init__(self, buckets: int) -> None:
        self.horizon: int | None = None  # None: the first scrape only records where to start
        self.outcomes = dict.fromkeys(OUTCOMES, 0)
        self.buckets = [0] * buckets
        self.count = 0
        self.sum = 0.0

    def add(self, calls: dict[str, Any]) -> None:
        """Add one snapshot's ``calls`` (attempts between the last horizon and its own)."""
        for outcome, n in calls["outcomes"].items():
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + int(n)
        late = calls["lateness"]
        for i, n in enumerate(late["buckets"] or ()):
            self.buckets[i] += int(n)
        self.count += int(late["count"])
        self.sum += float(late["sum"])
        horizon = int(calls["horizon"])
        # a horizon never moves back; keeping the larger one is a guard, not a correction
        self.horizon = horizon if self.horizon is None else max(self.horizon, horizon)
