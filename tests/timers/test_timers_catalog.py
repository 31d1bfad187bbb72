"""Catalog checks of the timers schema: privileges, search paths, and the claim's plan."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
from psycopg.types.json import Jsonb

from tests.plans import explain_to_client
from tests.timers.conftest import Env


def test_timer_functions_are_not_public_and_pin_their_search_path(env: Env) -> None:
    rows = env.sql(
        "SELECT p.proname, has_function_privilege('public', p.oid, 'EXECUTE'), p.prosecdef,"
        " p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = 'mbus' AND p.proname LIKE 'timer\\_%'"
    )
    assert len(rows) >= 25
    for name, public, secdef, config in rows:
        assert not public, name
        assert not secdef, name
        assert config and "search_path=pg_catalog" in config, name


def test_claim_uses_the_due_index(env: Env) -> None:
    t0 = datetime(2030, 1, 1, tzinfo=UTC)
    items = [
        {
            "client_id": env.client.id,
            "group_key": "g",
            "event_key": f"e{i}",
            "run_at": (t0 + timedelta(seconds=i)).isoformat(),
            "url": "http://127.0.0.1:9/",
        }
        for i in range(5000)
    ]
    env.sql("SELECT count(*) FROM mbus.timer_create_many(%s, %s)", (Jsonb(items), t0))
    env.sql("ANALYZE mbus.timer_callbacks")
    plan = "\n".join(
        r[0]
        for r in env.sql(
            "EXPLAIN SELECT c.id FROM mbus.timer_callbacks AS c"
            " WHERE c.status = 'pending' AND c.run_at <= %s AND c.bucket_id = ANY (%s)"
            " AND (c.claimed_until IS NULL OR c.claimed_until <= %s)"
            " ORDER BY c.run_at, c.id LIMIT 100 FOR UPDATE SKIP LOCKED",
            (t0 + timedelta(seconds=100), list(range(32)), t0),
        )
    )
    assert "timer_callbacks_due" in plan, plan
    assert "Seq Scan" not in plan, plan


def test_creating_a_timer_looks_its_row_up_by_key(env: Env) -> None:
    # timer_create_many returns each item's row: once a join, which the planner (expecting 100
    # items) ran as a hash of the whole table, so creating one timer cost O(timers stored).
    t0 = datetime(2030, 1, 1, tzinfo=UTC)
    items = [
        {
            "client_id": env.client.id,
            "group_key": "g",
            "event_key": f"e{i}",
            "run_at": t0.isoformat(),
            "url": "http://127.0.0.1:9/",
        }
        for i in range(3000)
    ]
    env.sql("SELECT count(*) FROM mbus.timer_create_many(%s, %s)", (Jsonb(items), t0))
    with psycopg.connect(env.dsn, autocommit=True) as conn:
        plans = explain_to_client(conn)
        created, callback = conn.execute(
            "SELECT created, callback FROM mbus.timer_create(%s, 'g', 'one more', %s,"
            " 'http://127.0.0.1:9/')",
            (env.client.id, t0),
        ).fetchone() or (None, None)
    assert created is True and callback["event_key"] == "one more"
    lookups = [p for p in plans if "timer_callbacks" in p and "Insert" not in p]
    assert lookups, plans
    assert not any("Seq Scan on timer_callbacks" in p for p in lookups), lookups
