"""Recurring schedules: compute occurrences (cron in a time zone, or fixed intervals) and
materialize them as callbacks ahead of time.

A scheduler pass locks due schedules with ``FOR UPDATE SKIP LOCKED`` inside one transaction,
computes their occurrences up to ``now + horizon`` and calls ``mbus.timer_schedule_materialize``;
occurrence event keys are derived from the time, so an occurrence is never created twice, even
by two schedulers at once. Occurrences older than the schedule's ``stop_after_delay_s`` (missed
while no scheduler ran) are skipped, since they would fail at once.
"""

from __future__ import annotations

import logging
import math
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter  # type: ignore[import-untyped]

from pgmbus.errors import InvalidArgument
from pgmbus.timers import store
from pgmbus.timers.store import Conn

MAX_OCCURRENCES = 10_000
log = logging.getLogger("pgmbus.timers.scheduler")


def check_cron(expression: str) -> None:
    """Raise ``InvalidArgument`` unless ``expression`` is a valid cron expression."""
    if not croniter.is_valid(expression):
        raise InvalidArgument(f"invalid cron expression {expression!r}")


def occurrences(
    *,
    cron: str | None,
    timezone: str,
    interval_s: int | None,
    start_at: datetime,
    lo: datetime,
    hi: datetime,
) -> list[datetime]:
    """The schedule's occurrence times ``t`` with ``lo <= t < hi`` and ``t >= start_at``.

    A cron expression is evaluated in ``timezone`` (so ``0 9 * * *`` is 09:00 local time on
    both sides of a daylight-saving change); an interval counts from ``start_at``.
    """
    lo = max(lo, start_at)
    out: list[datetime] = []
    if hi <= lo:
        return out
    if interval_s is not None:
        step = timedelta(seconds=interval_s)
        k = max(0, math.ceil((lo - start_at) / step))
        t = start_at + k * step
        while t < hi and len(out) < MAX_OCCURRENCES:
            out.append(t)
            t += step
        return out
    if cron is None:
        raise InvalidArgument("a schedule needs cron or interval_s")
    tz = ZoneInfo(timezone)
    it = croniter(cron, lo.astimezone(tz) - timedelta(seconds=1))
    while len(out) < MAX_OCCURRENCES:
        t = it.get_next(datetime)
        if t >= hi:
            break
        if t >= lo:
            out.append(t)
    return out


async def generate(
    conn: Conn, *, horizon_s: float = 300, limit: int = 100, now: datetime | None = None
) -> int:
    """One scheduler pass: materialize due schedules' callbacks up to ``now + horizon_s``.

    Runs in its own transaction on ``conn`` (which must not be inside one). Returns the number
    of callbacks created.
    """
    created = 0
    async with conn.transaction():
        if now is None:
            now = await store.server_now(conn)
        due = await store.schedules_due(conn, horizon_s, limit, now)
        for sid, cron, tz, interval_s, start_at, end_at, generated_until, stop_after in due:
            hi = now + timedelta(seconds=horizon_s)
            if end_at is not None:
                hi = min(hi, end_at)
            lo = max(generated_until, now - timedelta(seconds=stop_after))
            try:
                times = occurrences(
                    cron=cron, timezone=tz, interval_s=interval_s, start_at=start_at, lo=lo, hi=hi
                )
            except (ValueError, KeyError) as exc:  # e.g. a bad cron stored through SQL
                log.warning("schedule %s skipped: %s", sid, exc)
                continue
            if len(times) == MAX_OCCURRENCES:
                hi = times[-1]  # continue from here next pass
                times = times[:-1]
            until = max(hi, generated_until)
            created += await store.schedule_materialize(conn, sid, times, until, now)
    return created
