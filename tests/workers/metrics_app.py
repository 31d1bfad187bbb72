"""The app run by ``pgmbus worker`` in the worker metrics tests (DSN: PGMBUS_DSN).

Known outcomes: a queue message with ``{"fail": n}`` fails its first n attempts, one with
``{"bury": true}`` is never retried; a stream event with ``{"fail": true}`` always fails.
"""

from __future__ import annotations

from typing import Any

import psycopg

from pgmbus.handlers import App
from pgmbus.queues import Message
from pgmbus.streams import Event

app = App()  # DSN from PGMBUS_DSN when it runs


class Permanent(Exception):
    """Bad input: straight to the dmq."""


@app.handler(
    "work", max_attempts=3, backoff=0.05, jitter=0.0, no_retry_on=(Permanent,), poll_interval=0.2
)
def work(message: Message) -> None:
    if message.data.get("bury"):
        raise Permanent("bad input")
    if message.attempts <= int(message.data.get("fail", 0)):
        raise ConnectionError("flaky")


@app.stream_handler("tally", idle_wait=0.2)
async def tally(conn: psycopg.AsyncConnection[Any], event: Event) -> None:
    if isinstance(event.payload, dict) and event.payload.get("fail"):
        raise RuntimeError("cannot tally")
