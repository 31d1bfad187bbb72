"""What the stream worker and its blocking twin share: stats, handler types, a stop-aware pause.

The worker is written once, for asyncio (``worker_async.py``); ``tools/async_to_sync.py``
makes ``worker.py`` from it. Whatever both must have as the same object (the stats class the
runtime reports) or in two flavours the generator cannot derive (a sleep that asyncio would
not block on) lives here.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from pgmbus.streams.events import Event

Handler = Callable[[psycopg.Connection[Any], Event], None]
"""A blocking stream handler: ``handler(conn, event)`` in the batch's transaction."""

AsyncHandler = Callable[[psycopg.AsyncConnection[Any], Event], Awaitable[None]]
"""An asyncio stream handler: ``await handler(conn, event)`` in the batch's transaction."""

ERRORS_KEPT = 100
"""The last reasons of reconnects a worker keeps (its memory stays bounded)."""

STOP_POLL = 0.05
"""Seconds between two looks at ``stop()`` while a worker waits to reconnect."""


@dataclass
class WorkerStats:
    """What a worker has done so far."""

    batches: int = 0
    handled: int = 0
    retried: int = 0
    dead: int = 0
    maintained: int = 0
    reconnects: int = 0
    errors: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=ERRORS_KEPT)
    )


def pause(seconds: float, stop: Callable[[], bool]) -> None:
    """Sleep ``seconds``, or less once ``stop()`` says so."""
    deadline = time.monotonic() + seconds
    while not stop() and time.monotonic() < deadline:
        time.sleep(min(STOP_POLL, max(deadline - time.monotonic(), 0)))


async def apause(seconds: float, stop: Callable[[], bool]) -> None:
    """:func:`pause` that lets the event loop run."""
    deadline = time.monotonic() + seconds
    # stop is a plain callable (a threading or an asyncio event's is_set): it is polled
    while not stop() and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(min(STOP_POLL, max(deadline - time.monotonic(), 0)))
