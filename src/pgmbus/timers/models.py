"""The JSON shapes of the timers HTTP API (request bodies and responses) and their bounds.

The bounds are the SQL API's (``mbus.timer_retry_problem``, ``mbus.timer_field_problem``), so a
value refused here is refused there too, with the same reason.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from pgmbus.json_time import JsonTime
from pgmbus.timers import records

MAX_FAST_RETRIES = 10
MAX_DELAY_S = 2_592_000  # 30 days: retry.delay_s and retry.max_delay_s
MAX_FACTOR = 100
MAX_STOP_AFTER_DELAY_S = 31_622_400  # 366 days
MAX_INTERVAL_S = 31_622_400  # 366 days
TIME_FROM = datetime(1970, 1, 1, tzinfo=UTC)
TIME_BEFORE = datetime(9998, 1, 1, tzinfo=UTC)


def _in_time_range(value: datetime) -> datetime:
    if not TIME_FROM <= value < TIME_BEFORE:
        raise ValueError("must be from 1970-01-01 to before 9998-01-01 (UTC)")
    return value


Key = Annotated[
    str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^/\x00-\x1f\x7f]+$")
]
Url = Annotated[str, StringConstraints(max_length=4096, pattern=r"^(?i:https?)://\S+$")]
Time = Annotated[JsonTime, AfterValidator(_in_time_range)]
Status = Literal["pending", "notified", "failed", "cancelled", "rejected"]
QueueName = Annotated[str, StringConstraints(max_length=24, pattern=r"^[a-z][a-z0-9_]*$")]


# Numbers and booleans of request bodies are strict=True: FastAPI validates the decoded JSON in
# Python mode, where pydantic would take true for 1 and "3" for 3, which the schema refuses.


class RetryPolicy(BaseModel):
    """Fast in-process retries, then rescheduled retries (constant or exponential backoff)."""

    model_config = ConfigDict(extra="forbid")

    fast_retries: int = Field(
        default=2,
        ge=0,
        le=MAX_FAST_RETRIES,
        strict=True,
        description="immediate retries per attempt",
    )
    kind: Literal["constant", "exponential"] = "constant"
    delay_s: float = Field(
        default=60,
        gt=0,
        le=MAX_DELAY_S,
        strict=True,
        description="first (or every, if constant) retry delay, at most 30 days",
    )
    factor: float = Field(
        default=2,
        ge=1,
        le=MAX_FACTOR,
        strict=True,
        description="growth of the delay per retry (exponential)",
    )
    max_delay_s: float = Field(
        default=3600, gt=0, le=MAX_DELAY_S, strict=True, description="cap of the exponential delay"
    )


class CallbackCreate(BaseModel):
    """``POST /v1/callbacks``: idempotent on (group_key, event_key) for the calling client."""

    model_config = ConfigDict(extra="forbid")

    group_key: Key
    event_key: Key
    run_at: Time = Field(description="when to call, ISO 8601 with an offset")
    url: Url
    context: dict[str, Any] = Field(default_factory=dict)
    retry: RetryPolicy = Field(default_factory=lambda: RetryPolicy())
    stop_after_delay_s: float = Field(
        default=86400,
        ge=0,
        le=MAX_STOP_AFTER_DELAY_S,
        strict=True,
        description="give up (status failed) this long after originally_run_at",
    )
    originally_run_at: Time | None = Field(
        default=None, description="the time retries' deadline counts from (default: run_at)"
    )


class CallbackUpdate(BaseModel):
    """``PATCH /v1/callbacks/{group_key}/{event_key}``: fields left out are kept."""

    model_config = ConfigDict(extra="forbid")

    run_at: Time | None = None
    originally_run_at: Time | None = None
    url: Url | None = None
    context: dict[str, Any] | None = None
    i_ensure_pending: bool = Field(
        default=False,
        strict=True,
        description="also update a cancelled callback, making it pending again",
    )


class Callback(BaseModel):
    """A callback as stored."""

    id: int
    group_key: str
    event_key: str
    run_at: datetime
    originally_run_at: datetime
    url: str
    context: dict[str, Any]
    retry: RetryPolicy
    stop_after_delay_s: float
    status: Status
    attempts: int
    webhook_id: UUID
    schedule_key: str | None = None
    last_status_code: int | None = None
    last_error: str | None = None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None

    @classmethod
    def from_record(cls, record: records.Callback) -> Callback:
        """The JSON shape of a callback the store returned."""
        return cls.model_validate(asdict(record))


class CallbackPage(BaseModel):
    """A page of callbacks; pass ``next_after`` as ``after`` for the next page."""

    items: list[Callback]
    next_after: int | None


class History(BaseModel):
    """A callback's change log and HTTP calls (the change log outlives a delete)."""

    callback: Callback | None
    changes: list[dict[str, Any]]
    attempts: list[dict[str, Any]]

    @classmethod
    def from_record(cls, record: records.History) -> History:
        """The JSON shape of a history the store returned."""
        return cls.model_validate(asdict(record))


class Target(BaseModel):
    """Where a schedule's occurrences go: ``{"url": ...}`` or ``{"queue": ...}``."""

    model_config = ConfigDict(extra="forbid")

    url: Url | None = Field(default=None, description="each occurrence POSTs a callback here")
    queue: QueueName | None = Field(
        default=None, description="each occurrence posts one message to this mbus queue"
    )

    @model_validator(mode="after")
    def _one(self) -> Target:
        if (self.url is None) == (self.queue is None):
            raise ValueError("a target is exactly one of url and queue")
        return self


class ScheduleCreate(BaseModel):
    """``POST /v1/schedules``: exactly one of ``cron`` (in ``timezone``) and ``interval_s``, and
    one target: ``url`` or ``target`` (``{"url": ...}`` or ``{"queue": ...}``)."""

    model_config = ConfigDict(extra="forbid")

    schedule_key: Annotated[
        str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^/@\x00-\x1f\x7f]+$")
    ]
    group_key: Key | None = Field(
        default=None, description="group of the callbacks (default: the key)"
    )
    cron: str | None = Field(
        default=None,
        max_length=100,
        description="5-field cron expression, e.g. '30 9 * * 1-5'; one that never fires is refused",
    )
    timezone: str = Field(
        default="UTC", max_length=64, description="IANA time zone of the cron expression"
    )
    interval_s: int | None = Field(default=None, ge=1, le=MAX_INTERVAL_S, strict=True)
    url: Url | None = Field(default=None, description='short for target {"url": ...}')
    target: Target | None = None
    context: dict[str, Any] = Field(default_factory=dict)
    retry: RetryPolicy = Field(default_factory=lambda: RetryPolicy())
    stop_after_delay_s: float = Field(default=86400, ge=0, le=MAX_STOP_AFTER_DELAY_S, strict=True)
    start_at: Time | None = None
    end_at: Time | None = None

    @model_validator(mode="after")
    def _one_target(self) -> ScheduleCreate:
        if (self.url is None) == (self.target is None):
            raise ValueError("give exactly one of url and target")
        return self

    @property
    def target_url(self) -> str | None:
        """The URL its occurrences call, or ``None`` for a queue target."""
        return self.url if self.target is None else self.target.url

    @property
    def target_queue(self) -> str | None:
        """The queue its occurrences post to, or ``None`` for a URL target."""
        return None if self.target is None else self.target.queue


class Schedule(BaseModel):
    """A recurring schedule as stored."""

    id: int
    schedule_key: str
    group_key: str
    cron: str | None
    timezone: str
    interval_s: int | None
    start_at: datetime
    end_at: datetime | None
    url: str | None = Field(description="the URL its occurrences call (null for a queue target)")
    queue: str | None = Field(
        default=None, description="the queue its occurrences post to (null for a URL target)"
    )
    target: dict[str, str] = Field(description='{"url": ...} or {"queue": ...}')
    context: dict[str, Any]
    retry: RetryPolicy
    stop_after_delay_s: float
    paused: bool
    paused_reason: str | None = Field(
        default=None, description="why the scheduler paused it (its runs could not be computed)"
    )
    generated_until: datetime
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_record(cls, record: records.Schedule) -> Schedule:
        """The JSON shape of a schedule the store returned."""
        target = {"url": record.url} if record.queue is None else {"queue": record.queue}
        return cls.model_validate({**asdict(record), "target": target})


class ErrorBody(BaseModel):
    """Every error answer (401, 404, 409, 413, 422): a short code and a readable message."""

    error: str = Field(description="short code, e.g. not_found, invalid_argument, too_large")
    message: str = Field(description="what went wrong (never more than a prefix of the input)")
