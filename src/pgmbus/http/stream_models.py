"""The JSON shapes of the streams HTTP API."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
)

from pgmbus.json_time import JsonTime

Group = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=48)]


def _topic_ok(value: str) -> str:
    """Refuse what the schema of ``Topic`` refuses: the log holds topics of at most 200 bytes."""
    if "\x00" in value or not (len(value) <= 50 or (value.isascii() and len(value) <= 200)):
        raise ValueError(
            "a topic is 1 to 200 bytes without NUL: up to 200 ASCII or 50 other characters"
        )
    return value


# JSON Schema counts characters and the log bytes (at most 200 in UTF-8): up to 200 ASCII
# characters, or up to 50 of any (4 bytes at most each), so that what the schema admits is stored.
Topic = Annotated[
    str,
    StringConstraints(min_length=1, max_length=200),
    AfterValidator(_topic_ok),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": "^[\\x01-\\x7f]{1,200}$"},
                {"type": "string", "pattern": "^[^\\x00]{1,50}$"},
            ]
        }
    ),
]

# Numbers are strict=True: FastAPI validates the decoded JSON in Python mode, where pydantic
# would take true for 1 and "3" for 3, which the schema (integer, number) refuses.

# A time of ``start``: RFC 3339 with an offset PostgreSQL takes (at most 15:59 either way).
_START_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"([Zz]|[+-](0[0-9]|1[0-5]):[0-5][0-9])"
)


def _start_ok(value: str) -> str:
    """Refuse what the OpenAPI schema below refuses (a calendar date that does not exist too)."""
    if value in ("beginning", "now") or re.fullmatch(r"[0-9]{1,18}", value):
        return value
    time = _START_TIME.fullmatch(value)
    if time is not None:
        year, month, day, hour, minute, second = (int(time.group(i)) for i in range(1, 7))
        try:
            date(year, month, day)
        except ValueError:
            time = None
        if time is not None and hour <= 23 and minute <= 59 and second <= 60:
            return value
    raise ValueError(
        "start is 'beginning', 'now', an event id or an RFC 3339 time with an offset "
        "(e.g. 2026-01-31T12:00:00Z)"
    )


Start = Annotated[
    str,
    StringConstraints(max_length=100),
    AfterValidator(_start_ok),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "enum": ["beginning", "now"]},
                {"type": "string", "pattern": "^[0-9]{1,18}$"},
                {
                    "type": "string",
                    "format": "date-time",
                    "maxLength": 100,
                    "pattern": "([Zz]|[+-](0[0-9]|1[0-5]):[0-5][0-9])$",
                },
            ]
        }
    ),
]


class PublishIn(BaseModel):
    """``POST /v1/streams/events``: one event."""

    model_config = ConfigDict(extra="forbid")

    topic: Topic
    payload: Any
    key: str | None = Field(default=None, max_length=1000)
    headers: dict[str, Any] | None = None
    subscription_id: int | None = Field(
        default=None, ge=1, strict=True, description="send the event to this one subscription only"
    )
    delayed_until: JsonTime | None = Field(
        default=None, description="readers see the event from this time on (with a time zone)"
    )


class BatchEvent(BaseModel):
    """One event of a batch."""

    model_config = ConfigDict(extra="forbid")

    payload: Any
    key: str | None = Field(default=None, max_length=1000)
    headers: dict[str, Any] | None = None


class PublishBatchIn(BaseModel):
    """``POST /v1/streams/events/batch``: events of one topic in one statement."""

    model_config = ConfigDict(extra="forbid")

    topic: Topic
    events: list[BatchEvent] = Field(min_length=1, max_length=1000)
    subscription_id: int | None = Field(
        default=None,
        ge=1,
        strict=True,
        description="send every event to this one subscription only",
    )
    delayed_until: JsonTime | None = Field(
        default=None, description="readers see the events from this time on (with a time zone)"
    )


# An Idempotency-Key header: visible ASCII (header values are bytes), 1 to 200 of them.
IdempotencyKey = Annotated[
    str, StringConstraints(min_length=1, max_length=200, pattern=r"^[\x21-\x7e]+$")
]


class Published(BaseModel):
    """The ids of published events, in order."""

    ids: list[int]
    duplicate: bool = Field(
        default=False,
        description="true: the Idempotency-Key was published on this topic within "
        "streams.idempotency_window; nothing was stored and ids are the first publish's",
    )


class GroupCreate(BaseModel):
    """``POST /v1/streams/groups``."""

    model_config = ConfigDict(extra="forbid")

    group: Group
    start: Start = Field(default="now", description="beginning, now, an ISO time or an event id")
    slots: int = Field(default=1, ge=1, le=256, strict=True)


class SlotStatus(BaseModel):
    """A group's slot: position and what is unread."""

    slot: int
    group_position: str
    committed_at: datetime
    pending_events: int
    lag_s: float = Field(description="age of the oldest unread event (0 when none)")


class GroupOut(BaseModel):
    """A consumer group with its options and slots."""

    name: str
    slots: int
    topics: list[str] | None
    state: str
    expired_at: datetime | None
    expired_why: str | None
    created_at: datetime
    retries: int
    dmq: int = Field(description="events of the group in its dead-message queue")
    dead_letters: int = Field(
        description="deprecated: the same as `dmq`", json_schema_extra={"deprecated": True}
    )
    pending_events: int
    lag_s: float
    slot_status: list[SlotStatus]
    http_leases: list[dict[str, Any]]


class SeekIn(BaseModel):
    """``POST /v1/streams/groups/{group}/seek``."""

    model_config = ConfigDict(extra="forbid")

    start: Start = Field(description="beginning, now, an ISO time or an event id")


class ReadIn(BaseModel):
    """``POST /v1/streams/groups/{group}/read``: lease the group's next batch."""

    model_config = ConfigDict(extra="forbid")

    limit: int = Field(
        default=100,
        ge=1,
        le=10000,
        strict=True,
        validation_alias=AliasChoices("limit", "max_events"),
        description="at most this many events (`max_events` is the deprecated spelling)",
    )
    slot: int | None = Field(default=None, ge=0, le=255, strict=True)
    lease_s: float = Field(default=30, ge=0.001, le=3600, strict=True)


class EventOut(BaseModel):
    """An event of the log."""

    id: int
    topic: str
    key: str | None
    payload: Any
    headers: dict[str, Any] | None
    published_at: datetime


class ReadOut(BaseModel):
    """A leased batch: commit ``token`` before ``lease_until`` to move the group past it.

    No events (and no token) when the group has caught up.
    """

    token: UUID | None
    lease_until: datetime | None
    cursor: str | None
    events: list[EventOut]


class CommitIn(BaseModel):
    """A lease token of ``read``."""

    model_config = ConfigDict(extra="forbid")

    token: UUID


class ExtendIn(CommitIn):
    """Make the read lease end ``lease_s`` from now."""

    lease_s: float = Field(ge=0.001, le=3600, strict=True)


class Committed(BaseModel):
    """The group's position after a commit."""

    cursor: str


class DeadLetter(BaseModel):
    """An event that spent the group's attempts."""

    event_id: int
    topic: str
    key: str | None
    payload: Any
    headers: dict[str, Any] | None
    published_at: datetime
    attempts: int
    last_error: str | None
    dead_at: datetime


class SubscriptionIn(BaseModel):
    """``POST /v1/streams/groups/{group}/subscriptions``: a (shared) subscription."""

    model_config = ConfigDict(extra="forbid")

    condition: str = Field(min_length=1, max_length=4000, description="SQL over e and s")
    params: dict[str, Any] = Field(default_factory=dict)
    expires_after_s: float | None = Field(
        default=None,
        gt=0,
        le=30 * 86400,
        strict=True,
        description="removed after this long with no listener",
    )


class SubscriptionOut(BaseModel):
    """A subscription: identical (group, condition, params) share one id."""

    id: int
    group: str
    condition: str
    params: dict[str, Any]
    expires_after_s: float | None
