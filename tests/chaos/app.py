"""The app that `pgmbus worker tests.chaos.app:app` runs in the chaos suite: a queue handler
and two stream handlers (a group; a slotted group, both slots), each writing its results
(in the batch's transaction for streams) and then taking a moment, so that a kill or a stop
lands mid-handler."""

from __future__ import annotations

import os
import time
from typing import Any

import psycopg

from pgmbus.handlers import App
from pgmbus.queues.model import Message
from pgmbus.streams.events import Event
from tests.chaos import handlers

INSERT_RESULT = "INSERT INTO chaos_results (workload, value, message) VALUES (%s, %s, %s)"
WORKLOAD = os.environ.get("CHAOS_WORKLOAD", "app")

app = App()


@app.handler(
    "chaos_lease", concurrency=2, lease=3.0, max_attempts=1000, backoff=0.05, poll_interval=0.5
)
def queue_record(message: Message) -> None:
    """At least once: the result in its own statement, then the ack."""
    handlers.record_as(message, f"{WORKLOAD}-queue")


@app.stream_handler("chaos_g", batch=20, idle_wait=0.5)
def stream_record(conn: psycopg.Connection[Any], event: Event) -> None:
    """Exactly once: the result in the batch's transaction."""
    conn.execute(INSERT_RESULT, (f"{WORKLOAD}-stream", event.payload["v"], str(event.id)))
    time.sleep(0.002)


@app.stream_handler("chaos_slots", slots=[0, 1], batch=20, idle_wait=0.5)
def slots_record(conn: psycopg.Connection[Any], event: Event) -> None:
    """Exactly once, per slot."""
    conn.execute(INSERT_RESULT, (f"{WORKLOAD}-slots", event.payload["v"], str(event.id)))
    time.sleep(0.002)
