"""Plain values of the timers store, shared by its async source and its blocking twin."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

STATUSES = ("pending", "notified", "failed", "cancelled", "rejected")


def _time(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def _maybe_time(value: Any) -> datetime | None:
    return None if value is None else _time(value)


def _maybe_float(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class Client:
    """An owner client: its id, API key (shown once) and HMAC signing secret."""

    id: int
    api_key: str
    signing_secret: str


@dataclass(frozen=True)
class Retry:
    """A retry policy: fast retries within an attempt, then ``kind`` delays between attempts."""

    fast_retries: int
    kind: str
    delay_s: float
    factor: float
    max_delay_s: float

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Retry:
        """Build it from the SQL API's JSON object."""
        return cls(
            int(d["fast_retries"]),
            str(d["kind"]),
            float(d["delay_s"]),
            float(d["factor"]),
            float(d["max_delay_s"]),
        )


@dataclass(frozen=True)
class Callback:
    """A callback as ``mbus.timer_callback_json`` shows it (internal columns left out).

    ``schedule_key`` names the schedule that generated it (``None`` for a direct one);
    ``last_status_code`` and ``last_error`` are those of the latest HTTP call.
    """

    id: int
    group_key: str
    event_key: str
    run_at: datetime
    originally_run_at: datetime
    url: str
    context: dict[str, Any]
    retry: Retry
    stop_after_delay_s: float
    status: str
    attempts: int
    webhook_id: UUID
    schedule_key: str | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Callback:
        """Build it from the SQL API's JSON object."""
        code = d.get("last_status_code")
        return cls(
            id=int(d["id"]),
            group_key=str(d["group_key"]),
            event_key=str(d["event_key"]),
            run_at=_time(d["run_at"]),
            originally_run_at=_time(d["originally_run_at"]),
            url=str(d["url"]),
            context=dict(d["context"]),
            retry=Retry.from_json(d["retry"]),
            stop_after_delay_s=float(d["stop_after_delay_s"]),
            status=str(d["status"]),
            attempts=int(d["attempts"]),
            webhook_id=UUID(str(d["webhook_id"])),
            schedule_key=d.get("schedule_key"),
            last_status_code=None if code is None else int(code),
            last_error=d.get("last_error"),
            created_at=_time(d["created_at"]),
            updated_at=_time(d["updated_at"]),
            finished_at=_maybe_time(d.get("finished_at")),
        )


@dataclass(frozen=True)
class Change:
    """One change log row of a callback: create, update, cancel, delete, status or retry."""

    at: datetime
    callback_id: int | None
    action: str
    old_status: str | None
    new_status: str | None
    changes: dict[str, Any] | None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Change:
        """Build it from the SQL API's JSON object."""
        cid = d.get("callback_id")
        return cls(
            _time(d["at"]),
            None if cid is None else int(cid),
            str(d["action"]),
            d.get("old_status"),
            d.get("new_status"),
            d.get("changes"),
        )


@dataclass(frozen=True)
class Attempt:
    """One HTTP call of a callback: its attempt, the call within it, and how it went."""

    attempt: int
    call: int
    dispatcher: str | None
    started_at: datetime
    finished_at: datetime | None
    outcome: str | None
    status_code: int | None
    error: str | None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Attempt:
        """Build it from the SQL API's JSON object."""
        code = d.get("status_code")
        return cls(
            int(d["attempt"]),
            int(d["call"]),
            d.get("dispatcher"),
            _time(d["started_at"]),
            _maybe_time(d.get("finished_at")),
            d.get("outcome"),
            None if code is None else int(code),
            d.get("error"),
        )


@dataclass(frozen=True)
class History:
    """A callback's history; ``callback`` is ``None`` once it was deleted (changes remain)."""

    callback: Callback | None
    changes: list[Change]
    attempts: list[Attempt]

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> History:
        """Build it from the SQL API's JSON object."""
        cb = d.get("callback")
        return cls(
            None if cb is None else Callback.from_json(cb),
            [Change.from_json(c) for c in d["changes"]],
            [Attempt.from_json(a) for a in d["attempts"]],
        )


@dataclass(frozen=True)
class Schedule:
    """A recurring schedule: ``cron`` in ``timezone``, or every ``interval_s`` seconds.

    Its target is ``url`` (each occurrence is a callback) or ``queue`` (each occurrence posts
    one message to it): exactly one of them is set.

    ``paused_reason`` says why the scheduler paused it (``None`` when running or paused by its
    client); ``generated_until`` is how far its callbacks have been created.
    """

    id: int
    schedule_key: str
    group_key: str
    cron: str | None
    timezone: str
    interval_s: int | None
    start_at: datetime
    end_at: datetime | None
    url: str | None
    queue: str | None
    context: dict[str, Any]
    retry: Retry
    stop_after_delay_s: float
    paused: bool
    paused_reason: str | None
    generated_until: datetime
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Schedule:
        """Build it from the SQL API's JSON object."""
        interval = d.get("interval_s")
        return cls(
            id=int(d["id"]),
            schedule_key=str(d["schedule_key"]),
            group_key=str(d["group_key"]),
            cron=d.get("cron"),
            timezone=str(d["timezone"]),
            interval_s=None if interval is None else int(interval),
            start_at=_time(d["start_at"]),
            end_at=_maybe_time(d.get("end_at")),
            url=d.get("url"),
            queue=d.get("queue"),
            context=dict(d["context"]),
            retry=Retry.from_json(d["retry"]),
            stop_after_delay_s=float(d["stop_after_delay_s"]),
            paused=bool(d["paused"]),
            paused_reason=d.get("paused_reason"),
            generated_until=_time(d["generated_until"]),
            created_at=_time(d["created_at"]),
            updated_at=_time(d["updated_at"]),
        )
