"""The recent past the dashboard draws: figures sampled by the service at a steady pace.

Every ``every_s`` seconds the service reads one sample (``sql/http.sql`` 'series_sample': queue
depths and totals, stream group backlogs, timer lateness) and keeps the last ``window_s``
seconds of them in memory. A series is read from those samples: levels as sampled, rates as
the difference of two consecutive totals over the time between them. A total that went down
(a queue dropped and made again, dead messages replayed) gives no rate for that step rather
than a negative one. Each process keeps its own samples, from its own start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pgmbus.errors import ConfigurationError

log = logging.getLogger(__name__)

# The ring's bound, whatever the settings (one hour at a 0.4 s pace).
MAX_SAMPLES = 9000


@dataclass(frozen=True)
class Sample:
    """The figures of one moment, by object."""

    at: float
    # (queue, consumer) -> (depth, posted, consumed, dead)
    queues: dict[tuple[str, str], tuple[int, int, int, int]] = field(default_factory=dict)
    # (group, slot) -> (unread, lag_s)
    groups: dict[tuple[str, int], tuple[int, float]] = field(default_factory=dict)
    # client -> (due, late, lateness_s, failed)
    timers: dict[str, tuple[int, int, float, int]] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Sample:
        """The sample of one 'series_sample' row."""
        return cls(
            at=float(row["at"]),
            queues={(q, c): (d, p, k, x) for q, c, d, p, k, x in row["queues"]},
            groups={(g, int(s)): (int(n), float(lag)) for g, s, n, lag in row["groups"]},
            timers={c: (d, late, float(s), f) for c, d, late, s, f in row["timers"]},
        )


def _rate(before: float, after: float, seconds: float) -> float | None:
    if seconds <= 0 or after < before:
        return None
    return round((after - before) / seconds, 3)


class Samples:
    """The last ``window_s`` seconds of samples, taken every ``every_s`` seconds."""

    def __init__(self, every_s: float, window_s: float) -> None:
        if not (math.isfinite(every_s) and every_s > 0):
            raise ConfigurationError(
                f"every_s must be a positive number of seconds, not {every_s!r}"
            )
        if not (math.isfinite(window_s) and window_s >= every_s):
            raise ConfigurationError(
                f"window_s must be at least every_s ({every_s}), not {window_s!r}"
            )
        self.every_s = every_s
        self.window_s = window_s
        self.ring: deque[Sample] = deque(maxlen=min(MAX_SAMPLES, int(window_s / every_s) + 1))

    def add(self, sample: Sample) -> None:
        self.ring.append(sample)

    def queue(self, qname: str) -> list[dict[str, Any]]:
        """Per consumer of ``qname``: depth, posted/s, consumed/s and dead/s over time."""
        consumers = sorted({c for s in self.ring for q, c in s.queues if q == qname})
        out = []
        for cname in consumers:
            points: list[dict[str, Any]] = []
            prev: tuple[float, tuple[int, int, int, int]] | None = None
            for s in self.ring:
                now = s.queues.get((qname, cname))
                if now is None:
                    prev = None
                    continue
                rates: list[float | None] = [None] * 4
                if prev is not None:
                    seconds = s.at - prev[0]
                    rates = [_rate(a, b, seconds) for a, b in zip(prev[1], now, strict=True)]
                points.append(
                    {
                        "at": s.at,
                        "depth": now[0],
                        "posted_per_s": rates[1],
                        "consumed_per_s": rates[2],
                        "dead_per_s": rates[3],
                    }
                )
                prev = (s.at, now)
            out.append({"consumer": cname, "points": points})
        return out

    def group(self, name: str) -> list[dict[str, Any]]:
        """Per slot of stream group ``name``: unread events and lag over time."""
        slots = sorted({slot for s in self.ring for g, slot in s.groups if g == name})
        return [
            {
                "slot": slot,
                "points": [
                    {"at": s.at, "unread": v[0], "lag_s": round(v[1], 3)}
                    for s in self.ring
                    if (v := s.groups.get((name, slot))) is not None
                ],
            }
            for slot in slots
        ]

    def timers(self, client: str) -> list[dict[str, Any]]:
        """Timer client ``client``: due and late callbacks, lateness and failed/s over time."""
        points: list[dict[str, Any]] = []
        prev: tuple[float, int] | None = None
        for s in self.ring:
            v = s.timers.get(client)
            if v is None:
                prev = None
                continue
            due, late, lateness, failed = v
            failed_per_s = _rate(prev[1], failed, s.at - prev[0]) if prev else None
            points.append(
                {
                    "at": s.at,
                    "due": due,
                    "late": late,
                    "lateness_s": round(lateness, 3),
                    "failed_per_s": failed_per_s,
                }
            )
            prev = (s.at, failed)
        return points


async def keep_sampling(
    samples: Samples, read: Callable[[], Awaitable[dict[str, Any]]], stop: asyncio.Event
) -> None:
    """Add a sample every ``samples.every_s`` seconds until ``stop`` is set.

    A failed read (the database restarting) skips that sample and is logged once per run of
    failures: the charts show a gap, the service goes on.
    """
    failing = False
    while not stop.is_set():
        try:
            samples.add(Sample.from_row(await read()))
            failing = False
        except Exception as exc:  # the sampler must outlive any database trouble
            if not failing:
                log.warning("dashboard sample failed (charts show a gap): %s", exc)
            failing = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), samples.every_s)
