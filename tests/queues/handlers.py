"""Handlers for the worker tests (imported by ``pgmbus worker tests.queues.handlers:...``)."""

from __future__ import annotations

import time

from pgmbus.queues import Message


def handle(message: Message) -> None:
    """Fail on ``{"fail": true}``, sleep on ``{"sleep": s}``, else succeed."""
    if message.data.get("fail"):
        raise ValueError(f"cannot handle {message.iid}")
    time.sleep(float(message.data.get("sleep", 0)))
