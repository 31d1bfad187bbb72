"""The JSON shapes of the timers HTTP API (request bodies and responses)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

Key = Annotated[
    str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^/\x00-\x1f\x7f]+$")
]
Url = Annotated[str, StringConstraints(max_length=4096, pattern=r"^(?i:https?)://\S+$")]
Status = Literal["pending", "notified", "failed", "cancelled", "rejected"]


class RetryPolicy(BaseModel):
    """Fast in-process retries, then rescheduled retries (constant or exponential backoff)."""

    model_config = ConfigDict(extra="forbid")

    fast_retries: int = Field(default=2, ge=0, le=10, description="immediate retries per attempt")
    kind: Literal["constant", "exponential"] = "constant"
    delay_s: float = Field(
        default=60, gt=0, description="first (or every, if constant) retry delay"
    )
    factor: float = Field(
        default=2, ge=1, description="growth of the delay per retry (exponential)"
    )
    max_delay_s: float = Field(default=3600, gt=0, description="cap of the exponential delay")


class CallbackCreate(BaseModel):
    """``POST /v1/callbacks``: idempotent on (group_key, event_key) for the calling client."""

    model_config = ConfigDict(extra="forbid")

    group_key: Key
    event_key: Key
    run_at: AwareDatetime = Field(description="when to call, ISO 8601 with an offset")
    url: Url
    context: dict[str, Any] = Field(default_factory=dict)
    retry: RetryPolicy = Field(default_factory=lambda: RetryPolicy())
    stop_after_delay_s: float = Field(
        default=86400, ge=0, description="give up (status failed) this long after originally_run_at"
    )
    originally_run_at: AwareDatetime | None = Field(
        default=None, description="the time retries' deadline counts from (default: run_at)"
    )


class CallbackUpdate(BaseModel):
    """``PATCH /v1/callbacks/{group_key}/{event_key}``: fields left out are kept."""

    model_config = ConfigDict(extra="forbid")

    run_at: AwareDatetime | None = None
    originally_run_at: AwareDatetime | None = None
    url: Url | None = None
    context: dict[str, Any] | None = None
    i_ensure_pending: bool = Field(
        default=False, description="also update a cancelled callback, making it pending again"
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


class CallbackPage(BaseModel):
    """A page of callbacks; pass ``next_after`` as ``after`` for the next page."""

    items: list[Callback]
    next_after: int | None


class History(BaseModel):
    """A callback's change log and HTTP calls (the change log outlives a delete)."""

    callback: Callback | None
    changes: list[dict[str, Any]]
    attempts: list[dict[str, Any]]


class ScheduleCreate(BaseModel):
    """``POST /v1/schedules``: exactly one of ``cron`` (in ``timezone``) and ``interval_s``."""

    model_config = ConfigDict(extra="forbid")

    schedule_key: Annotated[
        str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^/@\x00-\x1f\x7f]+$")
    ]
    group_key: Key | None = Field(
        default=None, description="group of the callbacks (default: the key)"
    )
    cron: str | None = Field(
        default=None, description="5-field cron expression, e.g. '30 9 * * 1-5'"
    )
    timezone: str = Field(default="UTC", description="IANA time zone of the cron expression")
    interval_s: int | None = Field(default=None, ge=1)
    url: Url
    context: dict[str, Any] = Field(default_factory=dict)
    retry: RetryPolicy = Field(default_factory=lambda: RetryPolicy())
    stop_after_delay_s: float = Field(default=86400, ge=0)
    start_at: AwareDatetime | None = None
    end_at: AwareDatetime | None = None


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
    url: str
    context: dict[str, Any]
    retry: RetryPolicy
    stop_after_delay_s: float
    paused: bool
    generated_until: datetime
    created_at: datetime
    updated_at: datetime


class ErrorBody(BaseModel):
    """An error answer."""

    error: str
    message: str
