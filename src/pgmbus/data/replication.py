"""Data access of the replication state (``sql/replication.sql``): primary or standby, the
synchronous standbys asked for and connected, replay lag. Read by ``pgmbus status`` and
``/metrics``; works on a primary and on a hot standby."""

from __future__ import annotations

from typing import Any

import psycopg

from pgmbus.errors import translating
from pgmbus.sqlfiles import load_queries

REPLICATION = load_queries("replication.sql")


def replication_state(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """The ``replication_state`` document (see the query's comment for its keys)."""
    with translating():
        row = conn.execute(REPLICATION["replication_state"]).fetchone()
    state: dict[str, Any] = row[0] if row else {}
    return state


async def areplication_state(conn: psycopg.AsyncConnection[Any]) -> dict[str, Any]:
    """:func:`replication_state` on an asyncio connection (the HTTP service's pool)."""
    with translating():
        row = await (await conn.execute(REPLICATION["replication_state"])).fetchone()
    state: dict[str, Any] = row[0] if row else {}
    return state


def describe(state: dict[str, Any]) -> str:
    """One line for people: the role, the synchronous standbys asked for, each standby."""
    if state.get("in_recovery"):
        delay = state.get("replay_delay_s")
        behind = "no transaction replayed yet" if delay is None else f"replay {delay:.1f} s behind"
        return f"standby (read-only; {behind})"
    names = state.get("synchronous_standby_names") or "none (asynchronous)"
    standbys = state.get("standbys") or []
    each = ", ".join(
        f"{s['name']} {s['state']}/{s['sync_state']} lag {float(s['replay_lag_s']):.2f} s"
        for s in standbys
    )
    return f"primary; synchronous standbys: {names}; standbys: {each or 'none connected'}"
