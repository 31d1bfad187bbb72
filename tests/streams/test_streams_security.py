"""Security in the catalog: nothing executable by PUBLIC, definer functions pin search_path."""

from __future__ import annotations

import psycopg
import pytest

from pgmbus import schema
from tests.streams.conftest import Connect


def _stream_functions() -> list[str]:
    files = [f for f in schema.function_set().files if f.path.startswith("streams/")]
    return sorted({name for f in files for name in f.functions})


def test_no_stream_function_is_executable_by_public(connect: Connect) -> None:
    conn = connect()
    names = _stream_functions()
    assert "publish" in names and "read_next" in names
    rows = conn.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'mbus' AND p.proname = ANY(%s) "
        "AND has_function_privilege('public', p.oid, 'EXECUTE')",
        (names,),
    ).fetchall()
    assert rows == []


def test_security_definer_functions_set_search_path(connect: Connect) -> None:
    conn = connect()
    rows = conn.execute(
        "SELECT p.proname, p.proconfig FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'mbus' AND p.prosecdef ORDER BY 1"
    ).fetchall()
    names = [r[0] for r in rows]
    assert {"_capture_row", "_capture_truncate", "_system_identifier"} <= set(names)
    for name, config in rows:
        assert config and any(c.startswith("search_path=") for c in config), name


def test_a_role_without_grants_cannot_use_the_log(connect: Connect, db_dsn: str) -> None:
    conn = connect(autocommit=True)
    conn.execute("DROP ROLE IF EXISTS outsider")
    conn.execute("CREATE ROLE outsider LOGIN")
    try:
        with psycopg.connect(db_dsn, user="outsider", autocommit=True) as other:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                other.execute("SELECT mbus.publish('t', '{}')")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                other.execute("SELECT * FROM mbus.read_next('g')")
    finally:
        conn.execute("DROP ROLE outsider")
