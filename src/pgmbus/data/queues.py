"""Data access of the queues engine: ``sql/queues.sql``, and the checks other layers make."""

from __future__ import annotations

from typing import Any

import psycopg

from pgmbus.data.rows import one, rows
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


def require_consumer(conn: psycopg.Connection[Any], queue: str, consumer: str) -> None:
    """Raise ``NotFound`` (MB002) unless ``consumer`` of ``queue`` exists."""
    one(conn, QUEUES["require_consumer"], {"queue": queue, "consumer": consumer})


def waiting_list(conn: psycopg.Connection[Any], limit: int) -> list[dict[str, Any]]:
    """Messages waiting for their ``consume_after`` dependencies, oldest first."""
    return rows(conn, QUEUES["waiting_list"], {"limit": limit})


def create_view(conn: psycopg.Connection[Any], queue: str, view: str | None) -> str:
    """Create a view whose INSERT posts to ``queue``; its name."""
    return str(one(conn, QUEUES["create_view"], {"queue": queue, "view": view}))


def saga_list(conn: psycopg.Connection[Any], state: str | None, limit: int) -> list[dict[str, Any]]:
    """Sagas (in ``state``, or all), newest first."""
    return rows(conn, QUEUES["saga_list"], {"state": state, "limit": limit})
