"""Data access of the HTTP service's own tables and views: ``sql/http.sql`` (API keys and
scopes, the dashboard's pages, and the one-statement snapshot behind ``/metrics`` and
``pgmbus top``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg

from pgmbus.errors import translating
from pgmbus.sqlfiles import load_queries

SERVICE = load_queries("http.sql")


def snapshot(conn: psycopg.Connection[Any], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``snapshot`` query's JSON document (None if it returned no row)."""
    row = conn.execute(SERVICE["snapshot"], {"with_queues": True, **params}).fetchone()
    if row is None:
        return None
    document: dict[str, Any] = row[0]
    return document


async def asnapshot(
    conn: psycopg.AsyncConnection[Any], params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """``snapshot`` on an asyncio connection."""
    query = SERVICE["snapshot"]
    row = await (await conn.execute(query, {"with_queues": True, **params})).fetchone()
    if row is None:
        return None
    document: dict[str, Any] = row[0]
    return document


def set_scopes(conn: psycopg.Connection[Any], name: str, scopes: list[str]) -> Any:
    """Replace the scopes of the API client ``name``; the scopes stored (a list)."""
    with translating():
        row = conn.execute(SERVICE["set_scopes"], {"name": name, "scopes": scopes}).fetchone()
    return row[0] if row else []


def list_clients(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    """The API clients: (id, name, scopes, created_at), as ``list_clients`` orders them."""
    with translating():
        return list(conn.execute(SERVICE["list_clients"]).fetchall())
