"""Blocking twins of :mod:`pgmbus.timers.store` that take a ``psycopg.Connection``.

Same names, parameters, results and errors as the async functions, and the same rule: each
runs one statement on the caller's connection, so it joins the caller's transaction::

    with psycopg.connect(dsn) as conn:
        conn.execute("INSERT INTO orders ...")
        created, cb = sync_store.create(conn, client_id, "orders", "42", run_at, url)
    # committed together

The async functions only ever await their connection, so each is run to completion here over
a thin adapter of the blocking connection: one implementation of the SQL calls, not two.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

import psycopg

from pgmbus.timers import store
from pgmbus.timers.store import STATUSES, Client

P = ParamSpec("P")
T = TypeVar("T")


class _Cursor:
    def __init__(self, cur: psycopg.Cursor[Any]) -> None:
        self._cur = cur

    async def fetchone(self) -> Any:
        return self._cur.fetchone()

    async def fetchall(self) -> list[Any]:
        return self._cur.fetchall()


class _Connection:
    """Looks like the part of ``AsyncConnection`` the store uses; runs it blocking."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    async def execute(self, query: Any, params: Any = None) -> _Cursor:
        return _Cursor(self._conn.execute(query, params))


def _run(coro: Coroutine[Any, Any, T]) -> T:
    try:
        coro.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    coro.close()
    raise RuntimeError("a timers store call waited on something other than its connection")


def _blocking(
    func: Callable[Concatenate[store.Conn, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[psycopg.Connection[Any], P], T]:
    @functools.wraps(func)
    def call(conn: psycopg.Connection[Any], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return _run(func(cast(store.Conn, _Connection(conn)), *args, **kwargs))

    return call


add_client = _blocking(store.add_client)
authenticate = _blocking(store.authenticate)
create_many = _blocking(store.create_many)
create = _blocking(store.create)
get = _blocking(store.get)
list_callbacks = _blocking(store.list_callbacks)
update = _blocking(store.update)
cancel = _blocking(store.cancel)
delete = _blocking(store.delete)
history = _blocking(store.history)
create_schedule = _blocking(store.create_schedule)
list_schedules = _blocking(store.list_schedules)
set_schedule_paused = _blocking(store.set_schedule_paused)
delete_schedule = _blocking(store.delete_schedule)
clean = _blocking(store.clean)
clean_if_due = _blocking(store.clean_if_due)

__all__ = [
    "STATUSES",
    "Client",
    "add_client",
    "authenticate",
    "cancel",
    "clean",
    "clean_if_due",
    "create",
    "create_many",
    "create_schedule",
    "delete",
    "delete_schedule",
    "get",
    "history",
    "list_callbacks",
    "list_schedules",
    "set_schedule_paused",
    "update",
]
