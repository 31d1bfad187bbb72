"""Data access of the streams engine: ``sql/streams.sql`` and the live listeners'
``sql/listeners.sql``."""

from __future__ import annotations

from typing import Any

import psycopg

from pgmbus.data.rows import arows, one, rows
from pgmbus.sqlfiles import load_queries

STREAMS = load_queries("streams.sql")
LISTENERS = load_queries("listeners.sql")


def stream_groups(conn: psycopg.Connection[Any], group: str | None) -> list[dict[str, Any]]:
    """The consumer groups (all when ``group`` is None, else that one or none), by name."""
    return rows(conn, STREAMS["stream_groups"], {"group": group})


async def astream_groups(
    conn: psycopg.AsyncConnection[Any], group: str | None
) -> list[dict[str, Any]]:
    """``stream_groups`` on an asyncio connection."""
    return await arows(conn, STREAMS["stream_groups"], {"group": group})


async def agroup_exists(conn: psycopg.AsyncConnection[Any], group: str) -> bool:
    """``group_exists`` on an asyncio connection."""
    return bool(await astream_groups(conn, group))


def group_exists(conn: psycopg.Connection[Any], group: str) -> bool:
    """Whether the stream consumer group ``group`` exists."""
    return bool(stream_groups(conn, group))


def log_consistent(conn: psycopg.Connection[Any]) -> bool:
    """Whether the stream log's stored transaction ids belong to this cluster."""
    return bool(one(conn, STREAMS["log_status"], {}))


async def await_events(conn: psycopg.AsyncConnection[Any]) -> None:
    """Have committed publishes notify this session (``mbus.await_events``)."""
    await conn.execute(STREAMS["await_events"])
