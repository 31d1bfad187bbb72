"""Recurring schedules: compute occurrences (cron in a time zone, or fixed intervals) and
materialize them ahead of time, as callbacks or (for a queue target) as messages posted once.

A scheduler pass locks due schedules with ``FOR UPDATE SKIP LOCKED`` inside one transaction,
computes their occurrences up to ``now + horizon`` and calls ``mbus.timer_schedule_materialize``;
occurrence event keys are derived from the time, so an occurrence is never created twice, even
by two schedulers at once. Occurrences older than the schedule's ``stop_after_delay_s`` (missed
while no scheduler ran) are skipped, since they would fail at once. A schedule whose runs cannot
be computed or created (a cron that never fires, stored through SQL; a value out of range) is
paused with the reason (``paused_reason``), in its own savepoint, instead of failing every pass.
"""

from __future__ import annotations

import logging
import math
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import CroniterError, croniter  # type: ignore[import-untyped]

from pgmbus.errors import InvalidArgument, PgmbusError
from pgmbus.timers import cron as cronexpr
from pgmbus.timers import store_async as store
from pgmbus.timers.store_async import Conn

MAX_OCCURRENCES = 10_000
log = logging.getLogger("pgmbus.timers.scheduler")


def check_cron(expression: str) -> None:
    """Raise ``InvalidArgument`` unless ``expression`` is a valid 5-field cron expression."""
    cronexpr.check_form(expression)


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
    cronexpr.check_form(cron)
    tz = ZoneInfo(timezone)
    it = croniter(cron, lo.astimezone(tz) - timedelta(seconds=1))
    while len(out) < MAX_OCCURRENCES:
        try:
            t = it.get_next(datetime)
        except CroniterError as exc:
            raise InvalidArgument(f"cron {cron!r} never fires ({exc})") from exc
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
            except (ValueError, KeyError, OverflowError, CroniterError, PgmbusError) as exc:
                # e.g. a cron that never fires, stored through SQL: paused, with the reason
                await _pause(conn, sid, f"next runs cannot be computed: {exc}", now)
                continue
            if len(times) == MAX_OCCURRENCES:
                hi = times[-1]  # continue from here next pass
                times = times[:-1]
            until = max(hi, generated_until)
            try:
                async with conn.transaction():  # a savepoint: one schedule fails alone
                    created += await store.schedule_materialize(conn, sid, times, until, now)
            except PgmbusError as exc:
                if not _about_values(exc.sqlstate):
                    raise
                await _pause(conn, sid, f"runs cannot be created: {exc.message}", now)
    return created


def _about_values(sqlstate: str | None) -> bool:
    """True for errors caused by a schedule's stored values (not locks, connections...)."""
    return sqlstate is not None and (sqlstate[:2] in ("22", "23") or sqlstate in _VALUE_ERRORS)


_VALUE_ERRORS = ("MB005", "MB006")


async def _pause(conn: Conn, schedule_id: int, reason: str, now: datetime) -> None:
    log.warning("schedule %s paused: %s", schedule_id, reason)
    await store.pause_broken_schedule(conn, schedule_id, reason, now=now)
