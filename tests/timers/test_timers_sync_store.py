"""The blocking store: same calls on a psycopg.Connection, joining the caller's transaction."""

from __future__ import annotations

import ast
import inspect
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from pgmbus.errors import InvalidState, NotFound
from pgmbus.timers import store as sync_store
from pgmbus.timers import store_async as store
from tests.timers.conftest import Env

URL = "http://127.0.0.1:9/cb"


def test_blocking_calls_create_read_list_cancel_and_history(env: Env) -> None:
    run_at = datetime.now(UTC) + timedelta(hours=1)
    with psycopg.connect(env.dsn, autocommit=True) as conn:
        created, cb = sync_store.create(
            conn, env.client.id, "g", "e1", run_at, URL, context={"n": 1}
        )
        again, same = sync_store.create(conn, env.client.id, "g", "e1", run_at, URL)
        assert created and not again and same.id == cb.id and isinstance(cb, store.Callback)
        assert sync_store.get(conn, env.client.id, "g", "e1").context == {"n": 1}
        listed = sync_store.list_callbacks(conn, env.client.id, status="pending")
        assert [c.event_key for c in listed] == ["e1"]
        assert sync_store.cancel(conn, env.client.id, "g", "e1").status == "cancelled"
        with pytest.raises(InvalidState):
            sync_store.cancel(conn, env.client.id, "g", "e1")
        with pytest.raises(NotFound):
            sync_store.get(conn, env.client.id, "g", "nope")
        history = sync_store.history(conn, env.client.id, "g", "e1")
        assert [c.action for c in history.changes] == ["create", "cancel"]
        assert history.callback is not None and history.callback.status == "cancelled"
        assert history.attempts == []


def test_blocking_create_joins_the_callers_transaction(env: Env) -> None:
    run_at = datetime.now(UTC) + timedelta(hours=1)
    with psycopg.connect(env.dsn) as conn:
        sync_store.create(conn, env.client.id, "g", "rolled-back", run_at, URL)
        conn.rollback()
        sync_store.create(conn, env.client.id, "g", "kept", run_at, URL)
        conn.commit()
    keys = [r[0] for r in env.sql("SELECT event_key FROM mbus.timer_callbacks")]
    assert keys == ["kept"]


def test_blocking_twin_has_every_public_call_of_the_async_store() -> None:
    assert sync_store.__all__ == store.__all__
    assert sync_store.Client is store.Client  # shared values, not copies
    for name in store.__all__:
        if inspect.iscoroutinefunction(getattr(store, name)):
            assert not inspect.iscoroutinefunction(getattr(sync_store, name)), name
            assert inspect.signature(getattr(store, name)).parameters.keys() == (
                inspect.signature(getattr(sync_store, name)).parameters.keys()
            ), name


def test_blocking_dispatcher_calls_lease_claim_and_give_back(env: Env) -> None:
    now = datetime.now(UTC)
    with psycopg.connect(env.dsn, autocommit=True) as conn:
        sync_store.create(conn, env.client.id, "g", "due", now - timedelta(seconds=1), URL)
        sync_store.ping(conn)  # raises if the database does not answer
        assert abs((sync_store.server_now(conn) - now).total_seconds()) < 60
        buckets = sync_store.heartbeat(conn, "d1", 10.0)
        assert buckets  # the only dispatcher takes every bucket
        rows = sync_store.claim(conn, "d1", buckets, 10, 15.0, lookahead_s=1.0)
        assert [r[5] for r in rows] == ["due"]  # event_key
        assert sync_store.claim(conn, "d1", buckets, 10, 15.0, lookahead_s=1.0) == []
        sync_store.unclaim(conn, "d1", [rows[0][0]], [rows[0][1]])
        again = sync_store.claim(conn, "d1", buckets, 10, 15.0, lookahead_s=1.0)
        assert [r[0] for r in again] == [rows[0][0]]
        sync_store.release(conn, "d1")
        assert sync_store.heartbeat(conn, "d2", 10.0) == buckets  # released: d2 takes them


def test_timer_sql_lives_in_the_store_only() -> None:
    """The dispatcher, the scheduler and the timers HTTP router run no statement of their own."""
    from pgmbus.http import timers as http_timers
    from pgmbus.timers import dispatcher, scheduler

    for module in (dispatcher, scheduler, http_timers):
        tree = ast.parse(Path(inspect.getfile(module)).read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("execute", "executemany", "copy", "_q"), (
                    f"{module.__name__} line {node.lineno} runs SQL: call pgmbus.timers.store_async"
                )
            if isinstance(node, ast.ImportFrom):
                assert node.module != "pgmbus.sqlfiles", module.__name__
                if node.module in ("pgmbus.timers.store", "pgmbus.timers.store_async"):  # public
                    assert not any(a.name.startswith("_") for a in node.names), module.__name__
