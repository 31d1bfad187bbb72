"""Data access of the queues engine: ``sql/queues.sql``, and the checks other layers make."""

from __future__ import annotations

from typing import Any

import psycopg

from pgmbus.data.rows import one
from pgmbus.sqlfiles import load_queries

QUEUES = load_queries("queues.sql")


def queue_exists(conn: psycopg.Connection[Any], queue: str) -> bool:
    """Whether ``queue`` exists."""
    return bool(one(conn, QUEUES["queue_exists"], {"queue": queue}))


def await_queue(conn: psycopg.Connection[Any], queue: str) -> None:
    """Have posts to ``queue`` notify this session at commit (``mbus.await_queue``)."""
    conn.execute(QUEUES["await_queue"], {"queue": queue})


def await_done(conn: psycopg.Connection[Any], queue: str) -> None:
    """Stop the notifications ``await_queue`` asked for."""
    conn.execute(QUEUES["await_done"], {"queue": queue})
