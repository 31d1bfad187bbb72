"""The values the queue client returns: messages, dead messages, queue and consumer stats."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from pgmbus.errors import InvalidArgument, InvalidName

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_NAME = 24


def check_name(kind: str, name: str) -> str:
    """Return ``name`` when it follows the naming rule (as ``mbus.check_name``), else raise.

    The client composes generated function names (``post_<queue>``) from names, so it checks
    them before the server does.
    """
    if not isinstance(name, str):
        raise InvalidArgument(
            f"{kind} must be a string, not {type(name).__name__}", sqlstate="MB006"
        )
    if not name:
        raise InvalidName(f"{kind} name must not be empty", sqlstate="MB001")
    if not _NAME.match(name):
        raise InvalidName(
            f"invalid {kind} name {name!r}: use a-z, 0-9 and _, starting with a letter",
            sqlstate="MB001",
        )
    if len(name.encode()) > MAX_NAME:
        raise InvalidName(
            f"{kind} name {name!r} is too long (at most {MAX_NAME} bytes)", sqlstate="MB001"
        )
    return name


@dataclass(frozen=True)
class Message:
    """One delivered message (a row shaped like ``mbus.qt_model``).

    ``lease_token`` and ``lease_until`` are set only for messages claimed with a lease;
    ``queue`` and ``consumer`` say where it was consumed from.
    """

    queue: str
    consumer: str | None
    id: int
    iid: str
    added: datetime
    delayed_until: datetime | None
    expires: datetime | None
    headers: dict[str, Any]
    properties: dict[str, Any] | None
    data: dict[str, Any]
    consume_after: list[str] | None
    attempts: int
    lease_token: UUID | None
    lease_until: datetime | None

    @classmethod
    def from_row(cls, queue: str, consumer: str | None, row: dict[str, Any]) -> Message:
        """Build a message from a ``mbus.qt_model`` row (a dict)."""
        return cls(queue=queue, consumer=consumer, **row)


@dataclass(frozen=True)
class DeadMessage:
    """A row of the dead-message queue ``mbus.dmq``."""

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
    priority: int = 0  # the priority it had; a replay posts it back with it
    # died at max_attempts with its last delivery never reported (its lease ended without ack,
    # nack or bury: an ack lost while the database was down), not by a handler's failure
    unreported: bool = False


@dataclass(frozen=True)
class QueueInfo:
    """A queue with its consumers and the queues its triggers copy to."""

    qname: str
    ncons: int
    roles_security: bool
    created_at: datetime
    consumers: list[str]
    triggers_to: list[str]


@dataclass(frozen=True)
class ConsumerStats:
    """``mbus.queue_stats`` for one consumer of one queue."""

    qname: str
    cname: str
    depth: int
    ready: int
    delayed: int
    leased: int
    expired: int
    oldest_age: timedelta | None
    dmq: int
    selector_errors: int = 0
    posted: int = 0
    consumed: int = 0
    paused: bool = False
    dmq_unreported: int = 0  # of dmq: died because their last delivery never reported


@dataclass(frozen=True)
class QueueCounters:
    """``mbus.queue_counters``: posted and consumed totals of a queue or one of its consumers.

    For the queue (``cname`` None) ``posted`` counts messages and ``consumed`` is the sum over
    its consumers; for a consumer both count its deliveries. Counters are sequences: a post
    or consume that rolls back still counts (like a Prometheus counter).
    """

    qname: str
    cname: str | None
    posted: int
    consumed: int
