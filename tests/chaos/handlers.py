"""Handlers run by ``pgmbus worker`` subprocesses in the chaos suite."""

from __future__ import annotations

import os
import time
from typing import Any

import psycopg

from pgmbus.queues.model import Message

_conn: list[psycopg.Connection[Any]] = []


def record(message: Message) -> None:
    """:func:`record_as` the workload ``$CHAOS_WORKLOAD``."""
    record_as(message, os.environ["CHAOS_WORKLOAD"])


def record_as(message: Message, workload: str) -> None:
    """Write the message's result (``$CHAOS_RESULTS_DSN``), then take a moment: a kill lands
    mid-handler, after the write and before the ack, as often as not."""
    if _conn and (_conn[0].closed or _conn[0].broken):
        _conn.pop().close()
    if not _conn:
        _conn.append(psycopg.connect(os.environ["CHAOS_RESULTS_DSN"], autocommit=True))
    _conn[0].execute(
        "INSERT INTO chaos_results (workload, value, message) VALUES (%s, %s, %s)",
        (workload, message.data["v"], str(message.id)),
    )
    time.sleep(0.01)
