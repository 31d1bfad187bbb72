"""Plain values of the timers store, shared by its async source and its blocking twin."""

from __future__ import annotations

from dataclasses import dataclass

STATUSES = ("pending", "notified", "failed", "cancelled", "rejected")


@dataclass(frozen=True)
class Client:
    """An owner client: its id, API key (shown once) and HMAC signing secret."""

    id: int
    api_key: str
    signing_secret: str
