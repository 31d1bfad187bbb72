"""Cron expressions of schedules: the accepted form, and whether and when one fires next."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter  # type: ignore[import-untyped]

from pgmbus.errors import InvalidArgument

MAX_LENGTH = 100


def zone(timezone: str) -> ZoneInfo:
    """The time zone named ``timezone``; raises ``InvalidArgument`` when it is unknown."""
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidArgument(f"unknown time zone {timezone[:64]!r}") from exc


def next_run(expression: str, timezone: str, after: datetime) -> datetime:
    """The first time strictly after ``after`` that ``expression`` fires in ``timezone``.

    Raises ``InvalidArgument`` when the expression is malformed or never fires (``0 0 31 2 *``).
    """
    check_form(expression)
    tz = zone(timezone)
    try:
        return croniter(expression, after.astimezone(tz)).get_next(datetime)  # type: ignore[no-any-return]
    except CroniterError as exc:
        raise InvalidArgument(f"cron {expression!r} never fires ({exc})") from exc
    except (ValueError, OverflowError) as exc:
        raise InvalidArgument(f"cron {expression!r} has no next run: {exc}") from exc


def check_form(expression: str) -> None:
    """Raise ``InvalidArgument`` unless ``expression`` is a valid 5-field cron expression."""
    if len(expression) > MAX_LENGTH:
        raise InvalidArgument(f"cron must be at most {MAX_LENGTH} characters")
    if len(expression.split()) != 5 or not croniter.is_valid(expression):
        raise InvalidArgument(
            f"invalid cron expression {expression!r}: 5 fields expected"
            " (minute hour day-of-month month day-of-week)"
        )


def check(
    expression: str,
    timezone: str = "UTC",
    *,
    start_at: datetime | None = None,
    end_at: datetime | None = None,
) -> datetime:
    """Check a schedule's cron: valid, and firing at ``start_at`` (default now) or later and
    before ``end_at``. Returns its first run; raises ``InvalidArgument`` with the reason."""
    start = start_at or datetime.now(UTC)
    first = next_run(expression, timezone, start - timedelta(seconds=1))
    if end_at is not None and first >= end_at:
        raise InvalidArgument(
            f"cron {expression!r} never fires between start_at and end_at (first run {first})"
        )
    return first
