"""Typed async calls of the timers SQL API (``mbus.timer_*``); the caller owns the transaction.

Every function takes an open ``psycopg.AsyncConnection`` and runs one statement on it, so it
joins the caller's transaction. Clock-dependent calls accept ``now`` (``None``: the server's
``now()``), which tests use to move time instead of sleeping. Database errors are raised as
the typed exceptions of :mod:`pgmbus.errors`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pgmbus.errors import DatabaseError, translating
from pgmbus.sqlfiles import load_queries
from pgmbus.timers import cron as cronexpr

STATUSES = ("pending", "notified", "failed", "cancelled", "rejected")

Conn = psycopg.AsyncConnection[Any]


def _q(name: str) -> Any:
    return load_queries("timers.sql")[name]


@dataclass(frozen=True)
class Client:
    """An owner client: its id, API key (shown once) and HMAC signing secret."""

    id: int
    api_key: str
    signing_secret: str


async def _row(cur: psycopg.AsyncCursor[Any]) -> Any:
    """The one row a function call returns (a missing row is a server-side bug)."""
    row = await cur.fetchone()
    if row is None:
        raise DatabaseError("the SQL API returned no row")
    return row


async def _one(conn: Conn, query: str, params: dict[str, Any]) -> Any:
    with translating():
        cur = await conn.execute(_q(query), params)
        row = await cur.fetchone()
    return None if row is None else row[0]


async def _all(conn: Conn, query: str, params: dict[str, Any]) -> list[Any]:
    with translating():
        cur = await conn.execute(_q(query), params)
        return [r[0] for r in await cur.fetchall()]


async def add_client(conn: Conn, name: str) -> Client:
    """Create an owner client named ``name``; raises ``AlreadyExists`` when it exists."""
    with translating():
        cur = await conn.execute(_q("add_client"), {"name": name})
        row = await _row(cur)
    return Client(int(row[0]), str(row[1]), str(row[2]))


async def authenticate(conn: Conn, api_key: str) -> int | None:
    """Return the id of the client owning ``api_key``, or ``None``."""
    value = await _one(conn, "authenticate", {"api_key": api_key})
    return None if value is None else int(value)


async def create_many(
    conn: Conn, items: list[dict[str, Any]], *, now: datetime | None = None
) -> list[tuple[bool, dict[str, Any]]]:
    """Create callbacks in one statement; idempotent on (client_id, group_key, event_key).

    Parameters
    ----------
    items:
        Dicts with ``client_id``, ``group_key``, ``event_key``, ``run_at``, ``url`` and
        optionally ``context``, ``retry``, ``stop_after_delay_s``, ``originally_run_at``.
    now:
        The creation time (default: the server's clock).

    Returns
    -------
    One ``(created, callback)`` per item in order; ``created`` is false for an existing key.
    """
    with translating():
        cur = await conn.execute(_q("create_many"), {"items": Jsonb(items), "now": now})
        rows = await cur.fetchall()
    return [(bool(r[1]), r[2]) for r in rows]


async def create(
    conn: Conn,
    client_id: int,
    group_key: str,
    event_key: str,
    run_at: datetime,
    url: str,
    *,
    context: dict[str, Any] | None = None,
    retry: dict[str, Any] | None = None,
    stop_after_delay_s: float | None = None,
    originally_run_at: datetime | None = None,
    now: datetime | None = None,
) -> tuple[bool, dict[str, Any]]:
    """Create one callback (see :func:`create_many`); returns ``(created, callback)``."""
    item: dict[str, Any] = {
        "client_id": client_id,
        "group_key": group_key,
        "event_key": event_key,
        "run_at": run_at.isoformat(),
        "url": url,
        "context": context or {},
        "retry": retry,
        "stop_after_delay_s": stop_after_delay_s,
        "originally_run_at": originally_run_at.isoformat() if originally_run_at else None,
    }
    return (await create_many(conn, [item], now=now))[0]


async def get(conn: Conn, client_id: int, group_key: str, event_key: str) -> dict[str, Any]:
    """The callback as a dict; raises ``NotFound``."""
    result: dict[str, Any] = await _one(
        conn, "get", {"client_id": client_id, "group_key": group_key, "event_key": event_key}
    )
    return result


async def list_callbacks(
    conn: Conn,
    client_id: int,
    *,
    group_key: str | None = None,
    status: str | None = None,
    limit: int = 100,
    after: int = 0,
) -> list[dict[str, Any]]:
    """The client's callbacks with id > ``after`` in id order (a page of at most ``limit``)."""
    params = {
        "client_id": client_id,
        "group_key": group_key,
        "status": status,
        "limit": limit,
        "after": after,
    }
    return await _all(conn, "list", params)


async def update(
    conn: Conn,
    client_id: int,
    group_key: str,
    event_key: str,
    *,
    run_at: datetime | None = None,
    originally_run_at: datetime | None = None,
    url: str | None = None,
    context: dict[str, Any] | None = None,
    i_ensure_pending: bool = False,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Change a pending callback (or a cancelled one with ``i_ensure_pending``, which makes it
    pending again); raises ``InvalidState`` otherwise."""
    params = {
        "client_id": client_id,
        "group_key": group_key,
        "event_key": event_key,
        "run_at": run_at,
        "originally_run_at": originally_run_at,
        "url": url,
        "context": None if context is None else Jsonb(context),
        "i_ensure_pending": i_ensure_pending,
        "now": now,
    }
    result: dict[str, Any] = await _one(conn, "update", params)
    return result


async def cancel(
    conn: Conn, client_id: int, group_key: str, event_key: str, *, now: datetime | None = None
) -> dict[str, Any]:
    """Cancel a pending callback; raises ``InvalidState`` for any other status."""
    params = {"client_id": client_id, "group_key": group_key, "event_key": event_key, "now": now}
    result: dict[str, Any] = await _one(conn, "cancel", params)
    return result


async def delete(
    conn: Conn,
    client_id: int,
    group_key: str,
    event_key: str,
    *,
    force: bool = False,
    now: datetime | None = None,
) -> None:
    """Delete a callback; a pending one due within a minute needs ``force``."""
    params = {
        "client_id": client_id,
        "group_key": group_key,
        "event_key": event_key,
        "force": force,
        "now": now,
    }
    await _one(conn, "delete", params)


async def history(conn: Conn, client_id: int, group_key: str, event_key: str) -> dict[str, Any]:
    """``{"callback", "changes", "attempts"}`` of a callback (changes outlive a delete)."""
    params = {"client_id": client_id, "group_key": group_key, "event_key": event_key}
    result: dict[str, Any] = await _one(conn, "history", params)
    return result


async def create_schedule(
    conn: Conn,
    client_id: int,
    schedule_key: str,
    url: str,
    *,
    cron: str | None = None,
    timezone: str = "UTC",
    interval_s: int | None = None,
    group_key: str | None = None,
    context: dict[str, Any] | None = None,
    retry: dict[str, Any] | None = None,
    stop_after_delay_s: float | None = None,
    start_at: datetime | None = None,
    end_at: datetime | None = None,
    now: datetime | None = None,
) -> tuple[bool, dict[str, Any]]:
    """Create a recurring schedule (``cron`` in ``timezone``, or every ``interval_s``).

    Raises ``InvalidArgument`` for a value out of its bounds and for a cron expression that is
    malformed or never fires (between ``start_at`` and ``end_at``).
    """
    if cron is not None:
        cronexpr.check(cron, timezone, start_at=start_at or now, end_at=end_at)
    params = {
        "client_id": client_id,
        "schedule_key": schedule_key,
        "url": url,
        "cron": cron,
        "timezone": timezone,
        "interval_s": interval_s,
        "group_key": group_key,
        "context": Jsonb(context or {}),
        "retry": None if retry is None else Jsonb(retry),
        "stop_after_delay_s": stop_after_delay_s,
        "start_at": start_at,
        "end_at": end_at,
        "now": now,
    }
    with translating():
        cur = await conn.execute(_q("schedule_create"), params)
        row = await _row(cur)
    return bool(row[0]), row[1]


async def pause_broken_schedule(
    conn: Conn, schedule_id: int, reason: str, *, now: datetime | None = None
) -> None:
    """Pause a schedule whose runs cannot be computed or created, keeping ``reason``."""
    params = {"schedule_id": schedule_id, "reason": reason, "now": now}
    await _one(conn, "schedule_pause_broken", params)


async def list_schedules(conn: Conn, client_id: int) -> list[dict[str, Any]]:
    """The client's schedules in key order."""
    return await _all(conn, "schedule_list", {"client_id": client_id})


async def set_schedule_paused(
    conn: Conn, client_id: int, schedule_key: str, paused: bool, *, now: datetime | None = None
) -> dict[str, Any]:
    """Pause (dropping its generated pending callbacks) or resume a schedule."""
    params = {"client_id": client_id, "schedule_key": schedule_key, "paused": paused, "now": now}
    result: dict[str, Any] = await _one(conn, "schedule_set_paused", params)
    return result


async def delete_schedule(
    conn: Conn, client_id: int, schedule_key: str, *, now: datetime | None = None
) -> None:
    """Delete a schedule and its generated pending callbacks."""
    params = {"client_id": client_id, "schedule_key": schedule_key, "now": now}
    await _one(conn, "schedule_delete", params)


async def clean(conn: Conn, ttl_days: int = 30, *, now: datetime | None = None) -> tuple[int, int]:
    """Delete finished callbacks and change log rows older than ``ttl_days``; return counts."""
    with translating():
        cur = await conn.execute(_q("clean"), {"ttl_days": ttl_days, "now": now})
        row = await _row(cur)
    return int(row[0]), int(row[1])


async def clean_if_due(
    conn: Conn, ttl_days: int = 30, every_s: float = 86400, *, now: datetime | None = None
) -> bool:
    """Run :func:`clean` when it last ran more than ``every_s`` ago; true when it ran."""
    params = {"ttl_days": ttl_days, "every_s": every_s, "now": now}
    return bool(await _one(conn, "clean_if_due", params))
