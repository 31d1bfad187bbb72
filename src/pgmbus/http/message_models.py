"""The JSON shapes of the queue message browser: filters, pages, a message's detail."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from pgmbus.http.queue_models import Name

BrowseState = Literal["ready", "delayed", "leased", "dead", "all"]

# key=value: the key is everything before the first '='
HeaderFilter = Annotated[str, StringConstraints(pattern=r"^[^=]{1,200}=", max_length=1200)]
# a.b.c=value: a path into data of 1..16 names (array positions are numbers), then its value
FieldFilter = Annotated[
    str, StringConstraints(pattern=r"^[^=.]{1,200}(\.[^=.]{1,200}){0,15}=", max_length=4000)
]
# L<id>.<consumer id> among the live deliveries, D<dmq_id> among the dead ones
Cursor = Annotated[str, StringConstraints(pattern=r"^(L[0-9]{1,18}\.[0-9]{1,9}|D[0-9]{1,18})$")]
Iid = Annotated[str, StringConstraints(min_length=1, max_length=200)]

_CURSOR = re.compile(r"^(?:L([0-9]+)\.([0-9]+)|D([0-9]+))$")


@dataclass(frozen=True)
class Filters:
    """The query's filters as the SQL function's bind parameters."""

    header: str | None = None
    value: str | None = None
    path: list[str] | None = None
    field: str | None = None

    @classmethod
    def parse(cls, header: str | None, field: str | None) -> Filters:
        """Split ``key=value`` and ``a.b=value`` (the schema's patterns hold already)."""
        h_key, _, h_value = header.partition("=") if header else (None, "", None)
        f_path, _, f_value = field.partition("=") if field else (None, "", None)
        return cls(
            h_key if header else None,
            h_value if header else None,
            f_path.split(".") if f_path else None,
            f_value if field else None,
        )


def parse_cursor(after: str | None) -> tuple[int | None, int | None, int | None]:
    """(live id, live consumer id, dead dmq_id) of a page's ``after`` cursor."""
    match = _CURSOR.match(after or "")
    if match is None:
        return None, None, None
    if match[3] is not None:
        return None, None, int(match[3])
    return int(match[1]), int(match[2]), None


def cursor_of(row: dict[str, Any]) -> str:
    """The cursor that continues a page after ``row``."""
    if row["dmq_id"] is not None:
        return f"D{row['dmq_id']}"
    return f"L{row['id']}.{row['c']}"


class MessageRow(BaseModel):
    """A delivery of a queue (one per consumer) or a dead copy, as the browser lists them."""

    kind: Literal["live", "dead"]
    iid: str
    consumer: str | None
    state: Literal["ready", "delayed", "leased", "dead"]
    priority: int
    added: datetime | None
    vt: datetime | None = Field(
        description="when the delivery may be claimed (null while it waits for consume_after); "
        "while leased, when the lease ends"
    )
    expires: datetime | None
    attempts: int
    reason: str | None = Field(description="why it died (dead copies)")
    died_at: datetime | None
    dmq_id: int | None
    headers: dict[str, Any] | None
    data: dict[str, Any]


class MessagesPage(BaseModel):
    """A page of messages; ``next_after`` continues it (null at the end). A page reads at most
    10,000 rows, so a narrow filter can give a short page that still continues."""

    items: list[MessageRow]
    next_after: str | None


class MessageDetail(BaseModel):
    """One message of a queue: payloads, deliveries, dead copies, waits, history, saga."""

    queue: str
    iid: str
    id: int | None
    added: datetime | None
    data: dict[str, Any]
    headers: dict[str, Any] | None
    properties: dict[str, Any] | None
    consume_after: list[str] | None
    deliveries: list[dict[str, Any]] = Field(
        description="per consumer: state, vt, lease_until (while leased), waiting, attempts, "
        "priority, delayed_until, expires"
    )
    dead: list[dict[str, Any]] = Field(description="its dead copies: dmq_id, consumer, reason")
    waiting_for: list[str] = Field(description="iids it waits for (consume_after)")
    waiting_since: datetime | None
    history: dict[str, Any] = Field(
        description="what its headers record of its way: seenby, source_db, enqueue_time"
    )
    triggers_to: list[str] = Field(description="queues this queue's triggers copy posts to")
    routes: list[dict[str, Any]] = Field(description="exchange routes forwarding this queue")
    saga: dict[str, Any] | None = Field(description="the saga it is a step of, with its steps")


class ActIn(BaseModel):
    """An operator's action on one message: only ``consumer``'s delivery when given."""

    model_config = ConfigDict(extra="forbid")

    consumer: Name | None = None


class BuryMessageIn(ActIn):
    """Bury the message's deliveries with ``reason``."""

    reason: str = Field(default="buried by an operator", min_length=1, max_length=1000)


class Acted(BaseModel):
    """What an action changed."""

    queue: str
    iid: str
    action: Literal["delete", "bury", "release", "replay"]
    changed: int = Field(description="deliveries or dead copies changed")
