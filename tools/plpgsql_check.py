"""plpgsql_check over every PL/pgSQL function of the mbus schema, security warnings included.

    python tools/plpgsql_check.py [DSN]

Without a DSN it starts an embedded server (pgmbus.testing), installs the schema into a fresh
database and checks it there. It makes one queue with a view and one captured table first, so
the generated per-queue functions are checked too and every trigger function has a table to be
checked against. It prints each error and security warning and exits 1 when there is any; a
function whose warning is justified says so in its header and turns the check off with the
in-comment pragma ``-- @plpgsql_check_options: security_warnings = false`` in its body.
Exits 2 when the server has no plpgsql_check (Debian: postgresql-15-plpgsql-check).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import psycopg

# Only errors and security warnings: the other warning classes (unused variables, reserved
# parameter names, implicit casts) are style, not defects the check should fail on. newtable
# names a trigger's transition table (mbus.floor_guard reads its statement's rows from it).
CHECK = """
SELECT p.oid::regprocedure::text, c.level, c.message, c.lineno, c.statement
FROM pg_proc AS p
JOIN pg_language AS l ON l.oid = p.prolang AND l.lanname = 'plpgsql'
CROSS JOIN LATERAL plpgsql_check_function_tb(
    p.oid,
    relid => CASE WHEN p.prorettype = 'trigger'::regtype THEN coalesce(
        (SELECT min(t.tgrelid) FROM pg_trigger AS t WHERE t.tgfoid = p.oid), 0) ELSE 0 END,
    newtable => (SELECT min(t.tgnewtable::text)::name FROM pg_trigger AS t WHERE t.tgfoid = p.oid),
    fatal_errors => false, other_warnings => false, extra_warnings => false,
    performance_warnings => false, security_warnings => true) AS c
WHERE p.pronamespace = 'mbus'::regnamespace
ORDER BY 1, 4
"""

# a queue (generated functions), its view (view_insert), a captured table (_capture_row,
# _capture_truncate) and a moved queue's fence (refuse_moved_post): the trigger functions need a
# table to be checked against
PROBES = (
    "SELECT mbus.create_queue('plpgsql_check_probe', 1)",
    "SELECT mbus.create_view('plpgsql_check_probe')",
    "CREATE TABLE public.plpgsql_check_probe_table (id int PRIMARY KEY)",
    "SELECT mbus.capture_table('public.plpgsql_check_probe_table'::regclass)",
    "CREATE TRIGGER plpgsql_check_probe_moved BEFORE INSERT ON public.plpgsql_check_probe_table"
    " FOR EACH ROW EXECUTE FUNCTION mbus.refuse_moved_post('plpgsql_check_probe', 'elsewhere')",
)


class ExtensionMissing(RuntimeError):
    """The server has no plpgsql_check extension."""


@dataclass(frozen=True)
class Issue:
    """One error or warning of plpgsql_check."""

    function: str
    level: str
    message: str
    line: int | None
    statement: str | None

    def __str__(self) -> str:
        where = "" if self.line is None else f" line {self.line} ({self.statement})"
        return f"{self.function}{where}: {self.level}: {self.message}"


def available(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    """Can plpgsql_check be created on this server?"""
    row = conn.execute(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'plpgsql_check'"
    ).fetchone()
    return row is not None


def check(dsn: str) -> list[Issue]:
    """The issues of every mbus PL/pgSQL function in the (installed) database ``dsn``.

    Leaves the probe objects and the extension behind: run it on a scratch database.
    """
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not available(conn):
            raise ExtensionMissing("plpgsql_check is not installed on this server")
        conn.execute("CREATE EXTENSION IF NOT EXISTS plpgsql_check")
        for probe in PROBES:
            conn.execute(probe)
        return [Issue(*row) for row in conn.execute(CHECK).fetchall()]


def _scratch_check() -> list[Issue]:
    from pgmbus.testing.server import TestServer

    server = TestServer.start()
    try:
        name = server.create_database()
        try:
            return check(server.dsn(name))
        finally:
            server.drop_database(name)
    finally:
        server.stop()


def main(argv: list[str]) -> int:
    try:
        issues = check(argv[1]) if len(argv) > 1 else _scratch_check()
    except ExtensionMissing as exc:
        print(f"plpgsql_check: {exc} (Debian: postgresql-15-plpgsql-check)", file=sys.stderr)
        return 2
    for issue in issues:
        print(issue)
    print(f"plpgsql_check: {len(issues)} issue(s)", file=sys.stderr)
    return 1 if issues else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
