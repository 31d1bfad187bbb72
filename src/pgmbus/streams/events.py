"""Values the streams client returns (shared by the async client and its blocking twin)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple


class Event(NamedTuple):
    """One event of the log as a reader receives it (a named tuple: cheap to build)."""

    id: int
    topic: str
    key: str | None
    payload: Any
    headers: dict[str, Any] | None
    published_at: datetime
    subscription_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Batch:
    """A group's next batch: its events and the cursor that acknowledges all of them."""

    group: str
    cursor: str | None
    events: list[Event] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.events)

    def __bool__(self) -> bool:
        return bool(self.events)


@dataclass(frozen=True)
class Published:
    """What ``publish_once`` stored: the event ids, and whether an earlier publish of the key did.

    ``duplicate`` is true when the idempotency key was published on the topic within
    ``streams.idempotency_window``: nothing was stored, and ``ids`` are that first publish's.
    """

    ids: list[int]
    duplicate: bool


class RetryEvent(NamedTuple):
    """An event handed back by ``read_retries`` after a failed attempt."""

    id: int
    topic: str
    key: str | None
    payload: Any
    headers: dict[str, Any] | None
    published_at: datetime
    attempts: int
    last_error: str | None
