"""The JSON shapes of the streams HTTP API."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import AliasChoices, AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

Group = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=48)]
Topic = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Start = Annotated[
    str,
    StringConstraints(
        max_length=100,
        pattern=r"^(beginning|now|[0-9]{1,18}"
        r"|[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9:.]+)?(Z|[+-][0-9:]+)?)$",
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
        default=None, ge=1, description="send the event to this one subscription only"
    )
    delayed_until: AwareDatetime | None = Field(
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
        default=None, ge=1, description="send every event to this one subscription only"
    )
    delayed_until: AwareDatetime | None = Field(
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
    slots: int = Field(default=1, ge=1, le=256)


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
        validation_alias=AliasChoices("limit", "max_events"),
        description="at most this many events (`max_events` is the deprecated spelling)",
    )
    slot: int | None = Field(default=None, ge=0, le=255)
    lease_s: float = Field(default=30, ge=0.001, le=3600)


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

    lease_s: float = Field(ge=0.001, le=3600)


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
        default=None, gt=0, le=30 * 86400, description="removed after this long with no listener"
    )


class SubscriptionOut(BaseModel):
    """A subscription: identical (group, condition, params) share one id."""

    id: int
    group: str
    condition: str
    params: dict[str, Any]
    expires_after_s: float | None
