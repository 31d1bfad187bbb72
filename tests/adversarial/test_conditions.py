"""User-supplied SQL in subscription conditions: least privilege, and scopes on every object.

Attacks through a real ``pgmbus serve`` with real API keys and scopes, and through SQL under
real LOGIN roles: a condition must not read what its submitter cannot, and an event sent to one
subscription needs a scope over that subscription's group.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from pgmbus import streams
from pgmbus.errors import InvalidSelector
from tests.ops.conftest import ADMIN_SCOPES, Service, start

LEAK = "strpos(table_to_xml('mbus.timer_clients', true, false, '')::text, s.params->>'probe') > 0"
# conditions that reach past the event and the subscription (tables, settings, the session)
READS = [
    LEAK,
    "length(database_to_xml(true, false, '')::text) > 0",
    "length(schema_to_xml('mbus', true, false, '')::text) > 0",
    "current_setting('server_version') = s.params->>'probe'",
    "(pg_stat_get_activity(NULL)).query IS NOT NULL",
    "current_user = s.params->>'probe'",
    "e.topic = (SELECT api_key FROM mbus.timer_clients LIMIT 1)",
    "'mbus.timer_clients'::regclass IS NOT NULL",
    "e.topic::regclass IS NOT NULL",
    "has_table_privilege('mbus.timer_clients', 'SELECT')",
]
ROOM = "s.params @> jsonb_build_object('room', e.payload->'room')"
ALLOWED = [
    ROOM,
    "(e.payload->>'n')::int > 3 AND e.topic IN ('a', 'b') AND coalesce(e.key, '') <> ''",
    "lower(e.topic) ~ '^a' AND e.headers['x'] IS NOT NULL AND e.published_at > '2020-01-01Z'",
    "CASE WHEN e.id > 1 THEN e.payload ? 'x' ELSE false END AND greatest(e.id, 3) > 2",
]


@pytest.fixture
def svc(db_dsn: str) -> Iterator[Service]:
    base, stop = start(db_dsn)
    service = Service(db_dsn, base)
    service.add_key("admin", ADMIN_SCOPES)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        streams.create_group(conn, "chat", start="now")
        streams.create_group(conn, "audit", start="now")
    try:
        yield service
    finally:
        stop()


def _subscribe(svc: Service, key: str, condition: str, params: dict[str, Any]) -> Any:
    with svc.client(key) as http:
        return http.post(
            "/v1/streams/groups/chat/subscriptions",
            json={"condition": condition, "params": params},
        )


@pytest.mark.parametrize("condition", READS)
def test_http_condition_that_reads_past_event_and_subscription_is_refused(
    svc: Service, condition: str
) -> None:
    svc.add_key("chatter", ["streams:consume:chat"])
    r = _subscribe(svc, "chatter", condition, {"probe": "a"})
    assert r.status_code == 422, r.text
    assert "condition" in r.json()["message"]
    assert svc.value("SELECT count(*) FROM mbus.subscriptions") == 0


@pytest.mark.parametrize("condition", ALLOWED)
def test_http_condition_in_the_restricted_grammar_is_accepted(svc: Service, condition: str) -> None:
    svc.add_key("chatter", ["streams:consume:chat"])
    r = _subscribe(svc, "chatter", condition, {"room": 1})
    assert r.status_code == 201, r.text
    assert svc.value("SELECT condition FROM mbus.subscriptions") == condition


def test_http_key_cannot_attach_params_to_a_full_condition_of_the_group(svc: Service) -> None:
    # the owner (SQL) may use the full language; the same text from a key is still refused
    with psycopg.connect(svc.dsn, autocommit=True) as conn:
        streams.subscribe(conn, "chat", LEAK, {"probe": "never"})
    svc.add_key("chatter", ["streams:consume:chat"])
    r = _subscribe(svc, "chatter", LEAK, {"probe": "<api_key>"})
    assert r.status_code == 422, r.text
    assert svc.value("SELECT count(*) FROM mbus.subscriptions") == 1


BUILDERS = {
    f"{schema}jsonb_build_{kind}" for schema in ("", "pg_catalog.") for kind in ("object", "array")
}


@pytest.fixture(scope="module")
def catalog_calls(pg_server: Any) -> list[str]:
    """A call of every STABLE and VOLATILE function of the catalog, as a boolean condition."""
    name = pg_server.create_database(installed=False)
    try:
        with psycopg.connect(pg_server.dsn(name)) as conn:
            rows = conn.execute(
                "SELECT p.oid::regproc::text, array_agg(CASE WHEN t.typtype = 'p' "
                "THEN 'text' ELSE format_type(a.t, NULL) END ORDER BY a.n) "
                "FILTER (WHERE a.t IS NOT NULL) "
                "FROM pg_proc AS p LEFT JOIN LATERAL unnest(p.proargtypes::oid[]) "
                "WITH ORDINALITY AS a (t, n) ON true LEFT JOIN pg_type AS t ON t.oid = a.t "
                "WHERE p.provolatile IN ('s', 'v') AND p.prokind = 'f' "
                "GROUP BY p.oid ORDER BY p.oid"
            ).fetchall()
    finally:
        pg_server.drop_database(name)
    return [
        f"({fn}({', '.join(f'NULL::{t}' for t in (types or []))})) IS NOT DISTINCT FROM NULL"
        for fn, types in rows
        # the two allowed STABLE ones (they print timestamps in the session's TimeZone)
        if fn not in BUILDERS
    ]


def test_no_stable_or_volatile_catalog_function_is_in_the_restricted_grammar(
    db_dsn: str, catalog_calls: list[str]
) -> None:
    assert len(catalog_calls) > 500  # the whole catalog, not a sample
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        accepted = [
            c
            for c in catalog_calls
            if conn.execute("SELECT mbus._restricted_condition_error(%s)", (c,)).fetchone()
            == (None,)
        ]
    assert accepted == []


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_http_refuses_conditions_calling_stable_or_volatile_functions(
    svc: Service, catalog_calls: list[str], data: st.DataObject
) -> None:
    call = data.draw(st.sampled_from(catalog_calls))
    wrap = data.draw(st.sampled_from(["{}", "e.topic = 'x' AND {}", "NOT ({}) OR e.id > 0"]))
    if "chatter" not in svc.keys:
        svc.add_key("chatter", ["streams:consume:chat"])
    r = _subscribe(svc, "chatter", wrap.format(call), {"probe": "a"})
    assert r.status_code == 422, r.text
    assert svc.value("SELECT count(*) FROM mbus.subscriptions") == 0


@pytest.fixture
def low_role(db_dsn: str) -> Iterator[str]:
    """A LOGIN role that may subscribe but not read mbus.timer_clients; yields its DSN."""
    role = f"cond_low_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        for grant in (
            "GRANT USAGE ON SCHEMA mbus TO {}",
            "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA mbus TO {}",
            "GRANT SELECT ON mbus.stream_groups TO {}",
            "GRANT SELECT, INSERT, UPDATE ON mbus.subscriptions TO {}",
        ):
            conn.execute(sql.SQL(grant).format(sql.Identifier(role)))
        streams.create_group(conn, "chat", start="now")
    try:
        yield db_dsn.replace("user=postgres", f"user={role}")
    finally:
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_sql_role_cannot_read_a_table_through_a_condition_it_submits(
    db_dsn: str, low_role: str
) -> None:
    with psycopg.connect(low_role, autocommit=True) as low:
        assert low.execute("SELECT current_user").fetchone() != ("postgres",)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            low.execute("SELECT count(*) FROM mbus.timer_clients")
        for condition in READS:
            with pytest.raises(InvalidSelector, match="condition"):
                streams.subscribe(low, "chat", condition, {"probe": "a"})
        sid = streams.subscribe(low, "chat", ROOM, {"room": 1})  # the restricted grammar
    with psycopg.connect(db_dsn, autocommit=True) as owner:
        assert owner.execute("SELECT array_agg(id) FROM mbus.subscriptions").fetchone() == ([sid],)
        # the owner keeps the full language; the role cannot attach its params to it
        streams.subscribe(owner, "chat", LEAK, {"probe": "never"})
    with (
        psycopg.connect(low_role, autocommit=True) as low,
        pytest.raises(InvalidSelector, match="restricted grammar"),
    ):
        streams.subscribe(low, "chat", LEAK, {"probe": "<api_key>"})
    with psycopg.connect(db_dsn, autocommit=True) as owner:
        assert owner.execute("SELECT count(*) FROM mbus.subscriptions").fetchone() == (2,)
