"""No statement on a per-message path is planned again on every call.

PL/pgSQL keeps a statement's plan for the session, but for a statement with parameters
PostgreSQL builds a custom plan for each of the first five executions and then keeps the
generic plan only if it does not look dearer than those; a statement whose generic plan always
looks dearer (a sub-select beside a variable the custom plan folds away, a row count guessed
from a function's default) is planned again on every call: 6 to 45 us of server CPU each time
(docs/DESIGN.md, "No statement on a per-message path is planned on every call").
pg_stat_statements counts planning per statement, nested ones included, so each path here runs
20 times and no statement of it may have been planned on most of its calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

CALLS = 20
PAYLOAD = '{"k": 1, "text": "a payload"}'


@pytest.fixture
def stats_conn(db_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """An autocommit connection whose statements pg_stat_statements counts, nested ones too,
    planning included."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        [(libraries,)] = conn.execute("SHOW shared_preload_libraries").fetchall()
        preload = str(libraries)
        if "pg_stat_statements" not in preload:
            pytest.skip("the server does not preload pg_stat_statements")
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute("SET pg_stat_statements.track = 'all'")
        conn.execute("SET pg_stat_statements.track_planning = on")
        yield conn


def reset_counts(conn: psycopg.Connection[Any]) -> None:
    """Forget what the set-up ran (creating queues, groups, clients plans its statements on
    every call, as DDL does): only the paths measured are counted."""
    conn.execute(
        "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database"
        " WHERE datname = current_database()), 0)"
    )


# consume_after's dispatch to the dependency's queue (mbus.await_deps, mbus.release_deps):
# an EXECUTE is planned on every run by design; it only calls the queue's generated deps_<q>,
# whose statements keep their plans (and are checked like every other).
DISPATCH = "SELECT mbus.deps\\_%"


def planned_every_call(conn: psycopg.Connection[Any], calls: int = CALLS) -> list[str]:
    """The statements of this database run at least `calls` times and planned on more than
    half of their runs, with their counts (the deps_<q> dispatch aside)."""
    rows = conn.execute(
        "SELECT s.calls, s.plans, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 160)"
        " FROM pg_stat_statements AS s"
        " WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        "   AND s.calls >= %s AND s.plans * 2 > s.calls"
        "   AND s.query NOT LIKE '%%pg_stat_statements%%' AND s.query NOT LIKE %s",
        (calls, DISPATCH),
    ).fetchall()
    return [f"{plans} plans in {n} calls: {query}" for n, plans, query in rows]


def run(conn: psycopg.Connection[Any], sql: str, *args: Any, times: int = CALLS) -> None:
    """One statement `times` times, each its own transaction, as a client posts."""
    for _ in range(times):
        conn.execute(sql, args, prepare=True).fetchall()


def queue_with_selector_and_trigger(conn: psycopg.Connection[Any]) -> None:
    conn.execute("SELECT mbus.create_queue('plq', 1)")
    conn.execute("SELECT mbus.create_queue('plq_audit', 1)")
    conn.execute("SELECT mbus.create_consumer('plq', 'vip', $$(t.properties->>'tier') = 'gold'$$)")
    conn.execute("SELECT mbus.create_trigger('plq', 'plq_audit', $$t.data ? 'audit'$$)")


POSTS: dict[str, Callable[[psycopg.Connection[Any]], None]] = {
    "plain": lambda c: run(c, "SELECT mbus.post_plq(%s::jsonb)", PAYLOAD),
    "priority": lambda c: run(c, "SELECT mbus.post_plq(%s::jsonb, priority => 2)", PAYLOAD),
    "headers and properties": lambda c: run(
        c,
        "SELECT mbus.post_plq(%s::jsonb, headers => '{\"h\": 1}',"
        ' properties => \'{"tier": "gold"}\')',
        PAYLOAD,
    ),
    "delayed": lambda c: run(
        c, "SELECT mbus.post_plq(%s::jsonb, delayed_until => now() + interval '1 hour')", PAYLOAD
    ),
    "expires": lambda c: run(
        c, "SELECT mbus.post_plq(%s::jsonb, expires => now() + interval '1 hour')", PAYLOAD
    ),
    "dedupe key": lambda c: run(c, "SELECT mbus.post_plq(%s::jsonb, dedupe_key => 'k')", PAYLOAD),
    "batch of 100": lambda c: run(
        c, "SELECT count(*) FROM mbus.postn_plq(array_fill(%s::jsonb, ARRAY[100]))", PAYLOAD
    ),
    "batch with priorities": lambda c: run(
        c,
        "SELECT count(*) FROM mbus.postn_plq(array_fill(%s::jsonb, ARRAY[10]),"
        " priority => array_fill(1, ARRAY[10]))",
        PAYLOAD,
    ),
}


@pytest.mark.parametrize("kind", list(POSTS))
def test_posts_keep_their_plans(stats_conn: psycopg.Connection[Any], kind: str) -> None:
    queue_with_selector_and_trigger(stats_conn)
    reset_counts(stats_conn)
    POSTS[kind](stats_conn)
    assert planned_every_call(stats_conn) == []


def lease_one(conn: psycopg.Connection[Any]) -> object:
    """Lease the next message of plq's default consumer for 30 s; its lease token."""
    row = conn.execute(
        "SELECT lease_token FROM mbus.lease_plq_by_default(1, interval '30 seconds')",
        prepare=True,
    ).fetchone()
    assert row is not None
    return row[0]


def test_claims_keep_their_plans(stats_conn: psycopg.Connection[Any]) -> None:
    conn = stats_conn
    queue_with_selector_and_trigger(conn)
    conn.execute(
        "SELECT count(*) FROM mbus.postn_plq(array_fill(%s::jsonb, ARRAY[500]))", (PAYLOAD,)
    )
    reset_counts(conn)
    run(conn, "SELECT * FROM mbus.consume_plq_by_default()")
    run(conn, "SELECT * FROM mbus.consumen_plq_by_default(5)")
    for _ in range(CALLS):
        token = lease_one(conn)
        conn.execute("SELECT mbus.extend_plq(%s, interval '1 minute')", (token,), prepare=True)
        conn.execute("SELECT mbus.ack_plq(%s)", (token,), prepare=True)
    for verdict in ("SELECT mbus.nack_plq(%s)", "SELECT mbus.bury_plq(%s, 'no')"):
        for _ in range(CALLS):
            conn.execute(verdict, (lease_one(conn),), prepare=True)
    assert planned_every_call(conn) == []


def test_take_and_peek_keep_their_plans(stats_conn: psycopg.Connection[Any]) -> None:
    conn = stats_conn
    queue_with_selector_and_trigger(conn)
    iids = [
        row[0]
        for row in conn.execute(
            "SELECT * FROM mbus.postn_plq(array_fill(%s::jsonb, ARRAY[%s]))", (PAYLOAD, CALLS)
        )
    ]
    reset_counts(conn)
    for iid in iids:
        conn.execute("SELECT * FROM mbus.peek_plq(%s)", (iid,), prepare=True).fetchall()
        conn.execute("SELECT * FROM mbus.take_plq(%s)", (iid,), prepare=True).fetchall()
    assert planned_every_call(conn) == []


def test_consume_after_keeps_its_plans(stats_conn: psycopg.Connection[Any]) -> None:
    """A post waiting on a message of another queue, by the queue's own iid (found by id) and by
    a client iid (found by the iid column), then the consume that releases it at commit."""
    conn = stats_conn
    queue_with_selector_and_trigger(conn)
    conn.execute("SELECT mbus.create_queue('plq_first', 1)")
    reset_counts(conn)
    for k in range(CALLS):
        own = conn.execute(
            "SELECT mbus.post_plq_first(%s::jsonb)", (PAYLOAD,), prepare=True
        ).fetchone()
        client = conn.execute(
            "SELECT mbus.post_plq_first(%s::jsonb, iid => %s)",
            (PAYLOAD, f"plq_first.{k + 1}@elsewhere"),
            prepare=True,
        ).fetchone()
        assert own is not None and client is not None
        conn.execute(
            "SELECT mbus.post_plq(%s::jsonb, consume_after => %s::text[])",
            (PAYLOAD, [own[0], client[0]]),
            prepare=True,
        )
        assert conn.execute("SELECT * FROM mbus.consume_plq_by_default()").fetchall() == []
        for _ in range(2):
            conn.execute("SELECT * FROM mbus.consume_plq_first_by_default()", prepare=True)
        got = conn.execute("SELECT * FROM mbus.consume_plq_by_default()", prepare=True)
        assert len(got.fetchall()) == 1  # released by the two consumes' commits
    assert planned_every_call(conn) == []


def test_stream_paths_keep_their_plans(stats_conn: psycopg.Connection[Any]) -> None:
    conn = stats_conn
    conn.execute("SELECT mbus.create_group('plg')")
    reset_counts(conn)
    run(conn, "SELECT mbus.publish('plt', %s::jsonb)", PAYLOAD)
    run(conn, "SELECT mbus.publish('plt', %s::jsonb, key => 'k1')", PAYLOAD)
    run(
        conn,
        "SELECT count(*) FROM mbus.publish_batch('plt', array_fill(%s::jsonb, ARRAY[50]))",
        PAYLOAD,
    )
    for _ in range(CALLS):
        conn.execute("SELECT mbus.publish('plt', %s::jsonb)", (PAYLOAD,), prepare=True)
        conn.execute(
            "WITH r AS MATERIALIZED (SELECT * FROM mbus.read_next('plg', 10)),"
            " c AS (SELECT mbus.commit('plg', min(r.cursor)) FROM r HAVING count(*) > 0)"
            " SELECT r.id, x.n FROM r CROSS JOIN (SELECT count(*) AS n FROM c) AS x",
            prepare=True,
        ).fetchall()
    assert planned_every_call(conn) == []


def test_timer_paths_keep_their_plans(stats_conn: psycopg.Connection[Any]) -> None:
    conn = stats_conn
    client = conn.execute("SELECT client_id FROM mbus.timer_add_client('plc')").fetchone()
    buckets = conn.execute("SELECT mbus.timer_heartbeat('pld', 86400)").fetchone()
    assert client is not None and buckets is not None
    reset_counts(conn)
    for k in range(CALLS):
        conn.execute(
            "SELECT created, callback FROM mbus.timer_create(%s, 'g', %s,"
            " now() - interval '1 second', 'http://127.0.0.1:9/cb')",
            (client[0], f"e{k}"),
            prepare=True,
        ).fetchall()
    for _ in range(CALLS):
        claimed = conn.execute(
            "SELECT coalesce(jsonb_agg(jsonb_build_object('id', id, 'attempt', attempt,"
            " 'dispatcher', 'pld', 'outcome', 'ok', 'calls', '[]'::jsonb)), '[]')::text"
            " FROM mbus.timer_claim('pld', %s::integer[], 1, 30)",
            (buckets[0],),
            prepare=True,
        ).fetchone()
        assert claimed is not None
        conn.execute("SELECT mbus.timer_record(%s::jsonb)", (claimed[0],), prepare=True)
    assert planned_every_call(conn) == []
