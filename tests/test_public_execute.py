"""PUBLIC's EXECUTE on mbus functions follows mbus.public_entry_points() after an install."""

from __future__ import annotations

import psycopg

_PUBLIC_EXECUTABLE = """
SELECT p.oid::regprocedure::text
FROM pg_proc AS p
WHERE p.pronamespace = 'mbus'::regnamespace
  AND (p.proacl IS NULL OR EXISTS (
      SELECT 1 FROM aclexplode(p.proacl) AS a
      WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'))
"""


def test_public_executes_exactly_the_listed_entry_points(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    executable = {str(r[0]) for r in conn.execute(_PUBLIC_EXECUTABLE)}
    listed = {str(r[0]) for r in conn.execute("SELECT unnest(mbus.public_entry_points())")}
    assert executable == listed


def test_restrict_public_execute_revokes_a_new_function(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    conn.execute("CREATE FUNCTION mbus.tmp_probe() RETURNS int LANGUAGE sql AS 'SELECT 1'")
    assert "mbus.tmp_probe()" in {str(r[0]) for r in conn.execute(_PUBLIC_EXECUTABLE)}
    conn.execute("SELECT mbus.restrict_public_execute()")
    assert "mbus.tmp_probe()" not in {str(r[0]) for r in conn.execute(_PUBLIC_EXECUTABLE)}


def test_listed_entry_points_are_granted(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    conn.execute("CREATE FUNCTION mbus.tmp_entry() RETURNS int LANGUAGE sql AS 'SELECT 1'")
    conn.execute(
        "CREATE OR REPLACE FUNCTION mbus.public_entry_points() RETURNS text[] LANGUAGE sql "
        "AS $$ SELECT ARRAY['mbus.tmp_entry()'] $$"
    )
    conn.execute("SELECT mbus.restrict_public_execute()")
    assert "mbus.tmp_entry()" in {str(r[0]) for r in conn.execute(_PUBLIC_EXECUTABLE)}
