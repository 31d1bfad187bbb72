"""The blocking store: same calls on a psycopg.Connection, joining the caller's transaction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from pgmbus.errors import InvalidState, NotFound
from pgmbus.timers import sync_store
from tests.timers.conftest import Env

URL = "http://127.0.0.1:9/cb"


def test_blocking_calls_create_read_list_cancel_and_history(env: Env) -> None:
    run_at = datetime.now(UTC) + timedelta(hours=1)
    with psycopg.connect(env.dsn, autocommit=True) as conn:
        created, cb = sync_store.create(conn, env.client.id, "g", "e1", run_at, URL,
                                        context={"n": 1})
        again, same = sync_store.create(conn, env.client.id, "g", "e1", run_at, URL)
        assert created and not again and same["id"] == cb["id"]
        assert sync_store.get(conn, env.client.id, "g", "e1")["context"] == {"n": 1}
        listed = sync_store.list_callbacks(conn, env.client.id, status="pending")
        assert [c["event_key"] for c in listed] == ["e1"]
        assert sync_store.cancel(conn, env.client.id, "g", "e1")["status"] == "cancelled"
        with pytest.raises(InvalidState):
            sync_store.cancel(conn, env.client.id, "g", "e1")
        with pytest.raises(NotFound):
            sync_store.get(conn, env.client.id, "g", "nope")
        changes = sync_store.history(conn, env.client.id, "g", "e1")["changes"]
        assert [c["action"] for c in changes] == ["create", "cancel"]


def test_blocking_create_joins_the_callers_transaction(env: Env) -> None:
    run_at = datetime.now(UTC) + timedelta(hours=1)
    with psycopg.connect(env.dsn) as conn:
        sync_store.create(conn, env.client.id, "g", "rolled-back", run_at, URL)
        conn.rollback()
        sync_store.create(conn, env.client.id, "g", "kept", run_at, URL)
        conn.commit()
    keys = [r[0] for r in env.sql("SELECT event_key FROM mbus.timer_callbacks")]
    assert keys == ["kept"]
