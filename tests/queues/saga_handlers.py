"""Handlers for the saga CLI test (``pgmbus saga worker tests.queues.saga_handlers:...``)."""

from __future__ import annotations

from typing import Any

from pgmbus.queues import Message


def step(conn: Any, message: Message) -> None:
    """Fail when the saga's data says so, else record the step."""
    if message.data.get("fail"):
        raise RuntimeError("no")
    conn.execute("CREATE TABLE IF NOT EXISTS saga_cli_log (step text)")
    conn.execute("INSERT INTO saga_cli_log VALUES (%s)", (message.data["step"],))


def undo(conn: Any, message: Message) -> None:
    """Record the compensation."""
    conn.execute("CREATE TABLE IF NOT EXISTS saga_cli_log (step text)")
    conn.execute("INSERT INTO saga_cli_log VALUES (%s)", ("undo_" + message.data["step"],))
