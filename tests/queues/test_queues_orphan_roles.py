"""Roles left by a dropped database: adopted by a new database of that name, never stolen.

DROP DATABASE leaves a queue's cluster-wide roles behind. Their names carry the database's name,
so recreating a database of that name (what every test run and every developer's reset does) used
to find them and refuse the queue forever. pgmbus marks the roles it makes and adopts its own
orphans (old members revoked); a user's role, or a live database's, still blocks the name.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from pgmbus import schema
from pgmbus.testing.server import TestServer


@pytest.fixture
def dbname(pg_server: TestServer) -> Iterator[str]:
    name = f"orph_{uuid.uuid4().hex[:8]}"
    yield name
    pg_server.drop_database(name)


def recreate(server: TestServer, name: str) -> str:
    """Drop (if there) and create database name with the mbus schema; return its DSN."""
    server.drop_database(name)
    with psycopg.connect(server.admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = server.dsn(name)
    with psycopg.connect(dsn) as conn:
        schema.install(conn)
    return dsn


def run(dsn: str, query: str | sql.SQL | sql.Composed, *args: Any) -> Any:
    """Run one statement in autocommit; its first value, if it returns rows."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(query, args)
        if cur.description is None:
            return None
        row = cur.fetchone()
        return row[0] if row else None


def test_a_recreated_database_adopts_its_queues_orphaned_roles(
    pg_server: TestServer, dbname: str
) -> None:
    member = f"orph_member_{uuid.uuid4().hex[:6]}"
    dsn = recreate(pg_server, dbname)
    run(dsn, "SELECT mbus.create_queue('jobs')")
    role = run(dsn, "SELECT mbus.queue_role('post', 'jobs')")
    run(dsn, sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(member)))
    run(dsn, sql.SQL("GRANT {} TO {}").format(sql.Identifier(role), sql.Identifier(member)))

    dsn = recreate(pg_server, dbname)  # the roles survive the drop
    assert run(dsn, "SELECT count(*) FROM pg_roles WHERE rolname = %s", role) == 1
    run(dsn, "SELECT mbus.create_queue('jobs')")
    iid = run(dsn, "SELECT mbus.post_jobs('{\"n\": 1}'::jsonb)")
    assert run(dsn, "SELECT (mbus.consume('jobs')).iid") == iid
    # the old member's grant was for the dropped database: revoked, not inherited
    assert not run(dsn, "SELECT pg_has_role(%s, %s, 'MEMBER')", member, role)
    assert run(dsn, "SELECT has_schema_privilege(%s, 'mbus', 'USAGE')", role)
    run(dsn, sql.SQL("DROP ROLE {}").format(sql.Identifier(member)))


def test_a_users_role_or_a_live_databases_role_still_blocks_the_name(
    pg_server: TestServer, dbname: str
) -> None:
    dsn = recreate(pg_server, dbname)
    role = run(dsn, "SELECT mbus.queue_role('post', 'mine')")
    run(dsn, sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))
    try:
        with pytest.raises(psycopg.Error, match="not made by this database's mbus"):
            run(dsn, "SELECT mbus.create_queue('mine')")
        # a forged mark naming a database that is alive (postgres) is not an orphan either
        live_oid = run(dsn, "SELECT oid FROM pg_database WHERE datname = 'postgres'")
        run(
            dsn,
            sql.SQL("COMMENT ON ROLE {} IS {}").format(
                sql.Identifier(role),
                sql.Literal(f"made by pgmbus for database {dbname} (oid {live_oid})"),
            ),
        )
        with pytest.raises(psycopg.Error, match="not made by this database's mbus"):
            run(dsn, "SELECT mbus.create_queue('mine')")
        # nothing was created by the refused calls
        assert run(dsn, "SELECT count(*) FROM mbus.queue WHERE qname = 'mine'") == 0
    finally:
        run(dsn, sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_an_orphan_with_rights_in_a_live_database_is_not_adopted(
    pg_server: TestServer, dbname: str
) -> None:
    dsn = recreate(pg_server, dbname)
    run(dsn, "SELECT mbus.create_queue('kept')")
    role = run(dsn, "SELECT mbus.queue_role('post', 'kept')")
    # someone gave the role a right in another, live database
    run(
        pg_server.admin_dsn,
        sql.SQL("GRANT CONNECT ON DATABASE postgres TO {}").format(sql.Identifier(role)),
    )
    try:
        dsn = recreate(pg_server, dbname)
        with pytest.raises(psycopg.Error, match="not made by this database's mbus"):
            run(dsn, "SELECT mbus.create_queue('kept')")
    finally:
        run(
            pg_server.admin_dsn,
            sql.SQL("REVOKE CONNECT ON DATABASE postgres FROM {}").format(sql.Identifier(role)),
        )
