"""The JSON shapes of the queues HTTP API."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StringConstraints

from pgmbus.json_time import JsonTime

Name = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=24)]

# Numbers and booleans are strict=True: FastAPI validates the decoded JSON in Python mode, where
# pydantic would take true for 1 and "3" for 3, which the schema (integer, number) refuses.


class QueueCreate(BaseModel):
    """``POST /v1/queues``: create a queue and its ``default`` consumer."""

    model_config = ConfigDict(extra="forbid")

    queue: Name
    roles_security: bool = Field(default=False, strict=True)


class QueueOut(BaseModel):
    """A queue with its consumers and the queues its triggers copy to."""

    qname: str
    roles_security: bool
    created_at: datetime
    consumers: list[str]
    triggers_to: list[str]


class StatsOut(BaseModel):
    """``mbus.queue_stats`` of one consumer (``oldest_age_s``: age of the oldest ready one)."""

    qname: str
    cname: str
    depth: int
    ready: int
    delayed: int
    leased: int
    expired: int
    oldest_age_s: float | None
    dmq: int
    selector_errors: int = 0
    posted: int = Field(default=0, description="deliveries made for the consumer (a counter)")
    consumed: int = Field(default=0, description="deliveries it consumed (a counter)")
    paused: bool = False
    dmq_unreported: int = Field(
        default=0,
        description="of dmq: died at max_attempts because their last delivery never reported "
        "(an ack lost, a worker killed), not by a handler's failure",
    )


class PostIn(BaseModel):
    """``POST /v1/queues/{queue}/messages``: one message."""

    model_config = ConfigDict(extra="forbid")

    data: dict[str, Any]
    headers: dict[str, Any] | None = None
    properties: dict[str, Any] | None = None
    delayed_until: JsonTime | None = None
    expires: JsonTime | None = None
    iid: str | None = Field(default=None, max_length=100)
    dedupe_key: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="at most one pending message per key: the pending one's iid is returned",
    )
    consume_after: list[Annotated[str, StringConstraints(min_length=1, max_length=200)]] | None = (
        Field(default=None, max_length=1000, description="iids this message waits for")
    )
    priority: int = Field(
        default=0,
        ge=0,
        le=32767,
        strict=True,
        description="higher is claimed first; FIFO within one priority",
    )


class BatchItem(BaseModel):
    """One message of a batch."""

    model_config = ConfigDict(extra="forbid")

    data: dict[str, Any]
    headers: dict[str, Any] | None = None
    properties: dict[str, Any] | None = None
    priority: int = Field(
        default=0,
        ge=0,
        le=32767,
        strict=True,
        description="higher is claimed first; FIFO within one priority",
    )


class BatchIn(BaseModel):
    """``POST /v1/queues/{queue}/messages/batch``: messages posted in one statement."""

    model_config = ConfigDict(extra="forbid")

    messages: list[BatchItem] = Field(min_length=1, max_length=1000)
    delayed_until: JsonTime | None = None
    expires: JsonTime | None = None


class Posted(BaseModel):
    """The iids of posted messages, in order."""

    iids: list[str]


class LeaseIn(BaseModel):
    """``POST /v1/queues/{queue}/lease``: claim messages under a lease."""

    model_config = ConfigDict(extra="forbid")

    consumer: Name = "default"
    limit: int = Field(
        default=1,
        ge=1,
        le=1000,
        strict=True,
        validation_alias=AliasChoices("limit", "amount"),
        description="at most this many messages (`amount` is the deprecated spelling)",
    )
    lease_s: float = Field(
        default=30, ge=0.001, le=43200, strict=True, description="seconds the lease lasts"
    )
    max_attempts: int | None = Field(default=None, ge=1, le=1000, strict=True)
    wait_s: float = Field(
        default=0, ge=0, le=30, strict=True, description="wait this long for a message"
    )


class MessageOut(BaseModel):
    """A leased message; ``token`` finishes it (ack, nack, extend, bury)."""

    queue: str
    consumer: str | None
    iid: str
    added: datetime
    delayed_until: datetime | None
    expires: datetime | None
    headers: dict[str, Any]
    properties: dict[str, Any] | None
    data: dict[str, Any]
    attempts: int
    token: UUID | None
    lease_until: datetime | None


class Leased(BaseModel):
    """The messages a lease call claimed (none when the queue had nothing ready)."""

    messages: list[MessageOut]


class TokenIn(BaseModel):
    """A lease token."""

    model_config = ConfigDict(extra="forbid")

    token: UUID


class NackIn(TokenIn):
    """Give a leased message back, to be delivered again after ``delay_s``."""

    delay_s: float = Field(default=0, ge=0, le=86400 * 30, strict=True)


class ExtendIn(TokenIn):
    """Make the lease end ``lease_s`` from now."""

    lease_s: float = Field(ge=0.001, le=43200, strict=True)


class BuryIn(TokenIn):
    """Move the leased message to the dead-message queue."""

    reason: str = Field(min_length=1, max_length=1000)


class LeaseEnd(BaseModel):
    """When a lease ends."""

    lease_until: datetime


class DmqOut(BaseModel):
    """A message of the dead-message queue."""

    dmq_id: int
    qname: str
    cname: str | None
    iid: str
    data: dict[str, Any]
    headers: dict[str, Any] | None
    properties: dict[str, Any] | None
    attempts: int
    reason: str
    died_at: datetime
    priority: int = Field(default=0, description="the priority it had; a replay keeps it")


class DmqPage(BaseModel):
    """A page of dead messages; ``next_after`` continues it (null at the end)."""

    items: list[DmqOut]
    next_after: int | None


class Replayed(BaseModel):
    """The iid a replayed dead message was delivered (or posted) with."""

    iid: str


class TargetIn(BaseModel):
    """``POST /v1/queues/{queue}/pause`` and ``/resume``: the queue, or one of its consumers."""

    model_config = ConfigDict(extra="forbid")

    consumer: Name | None = None


class PurgeIn(TargetIn):
    """``POST /v1/queues/{queue}/purge``: ``confirm`` must repeat the queue's name."""

    confirm: str = Field(description="the queue's name again: a careless call purges nothing")


class Paused(BaseModel):
    """Whether the queue (or consumer) is paused now, and whether this call changed it."""

    queue: str
    consumer: str | None
    paused: bool
    changed: bool


class Purged(BaseModel):
    """How many deliveries a purge deleted."""

    purged: int
