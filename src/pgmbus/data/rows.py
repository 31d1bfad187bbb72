"""Run one query and shape its result: rows as dicts, one value, or a row's first column.

The database's errors come out typed (``pgmbus.errors.translating``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, LiteralString

import psycopg
from psycopg.rows import dict_row

from pgmbus.errors import translating


def rows(
    conn: psycopg.Connection[Any], query: LiteralString, params: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Every row as a dict (none for a statement that returns no rows)."""
    cur = conn.cursor(row_factory=dict_row)
    with translating():
        cur.execute(query, params)
        return cur.fetchall() if cur.description is not None else []


def value(conn: psycopg.Connection[Any], query: LiteralString, params: Mapping[str, Any]) -> Any:
    """The first column of the first row, or None when there is no row."""
    found = rows(conn, query, params)
    return next(iter(found[0].values())) if found else None


def one(conn: psycopg.Connection[Any], query: LiteralString, params: Mapping[str, Any]) -> Any:
    """The first column of the one row a call returns (None when it returns none)."""
    with translating():
        row = conn.execute(query, params).fetchone()
    return row[0] if row else None


async def aone(
    conn: psycopg.AsyncConnection[Any], query: LiteralString, params: Mapping[str, Any]
) -> Any:
    """``one`` on an asyncio connection."""
    with translating():
        row = await (await conn.execute(query, params)).fetchone()
    return row[0] if row else None


async def arows(
    conn: psycopg.AsyncConnection[Any], query: LiteralString, params: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """``rows`` on an asyncio connection."""
    cur = conn.cursor(row_factory=dict_row)
    with translating():
        await cur.execute(query, params)
        return [] if cur.description is None else await cur.fetchall()
