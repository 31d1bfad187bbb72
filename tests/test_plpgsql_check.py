"""plpgsql_check (tools/plpgsql_check.py) finds no error and no security warning in any mbus
PL/pgSQL function, the generated per-queue ones and the trigger functions included."""

from __future__ import annotations

import psycopg
import pytest

from tools import plpgsql_check


def test_every_mbus_plpgsql_function_passes_plpgsql_check(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        if not plpgsql_check.available(conn):
            pytest.skip("the server has no plpgsql_check (Debian: postgresql-15-plpgsql-check)")
    issues = plpgsql_check.check(db_dsn)
    assert [str(i) for i in issues] == []


def test_the_check_reports_what_it_should(db_dsn: str) -> None:
    # a function that pastes its argument into dynamic SQL and one that names a missing
    # function: the check must see both, or a clean run would prove nothing
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        if not plpgsql_check.available(conn):
            pytest.skip("the server has no plpgsql_check (Debian: postgresql-15-plpgsql-check)")
        conn.execute(
            "CREATE FUNCTION mbus.plpgsql_check_bad(p text) RETURNS void LANGUAGE plpgsql "
            "AS $$ BEGIN EXECUTE 'SELECT ' || p; PERFORM mbus.no_such_function(); END $$"
        )
    found = {(i.function, i.level) for i in plpgsql_check.check(db_dsn)}
    assert ("mbus.plpgsql_check_bad(text)", "security") in found
    assert ("mbus.plpgsql_check_bad(text)", "error") in found
