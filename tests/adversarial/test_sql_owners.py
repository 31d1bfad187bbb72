"""One owner per SQL decision: a rule written once and used by every function that needs it,
so that the copies cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

from pgmbus.errors import translate

Conn = psycopg.Connection[tuple[object, ...]]
ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ROOT / "src" / "pgmbus" / "sql" / "functions"


def _sqlstate(conn: Conn, query: str, params: tuple[object, ...] = ()) -> str | None:
    conn.execute("SAVEPOINT s")
    try:
        conn.execute(query, params)  # type: ignore[arg-type]
    except psycopg.Error as exc:
        conn.execute("ROLLBACK TO SAVEPOINT s")
        return translate(exc).sqlstate
    conn.execute("RELEASE SAVEPOINT s")
    return None


# --- the conninfo password check ------------------------------------------------------------

_WITH_PASSWORD = (
    "host=h dbname=d password=secret",
    "host=h password = secret",
    "PASSWORD=secret host=h",
    "postgresql://u:secret@h/d",
    "postgres://h/d?user=u&password=secret",
    "postgresql://h/d?password=secret",
    "",
    "   ",
)


@pytest.mark.parametrize("conninfo", _WITH_PASSWORD)
def test_every_stored_conninfo_is_refused_alike(conn: Conn, conninfo: str) -> None:
    """create_link, alter_link and add_server refuse the same conninfos with MB006, and store
    nothing."""
    conn.execute("SELECT mbus.create_link('own_l', 'service=own')")
    assert _sqlstate(conn, "SELECT mbus.create_link('own_l2', %s)", (conninfo,)) == "MB006"
    assert _sqlstate(conn, "SELECT mbus.alter_link('own_l', %s)", (conninfo,)) == "MB006"
    assert _sqlstate(conn, "SELECT mbus.add_server('own_s', %s)", (conninfo,)) == "MB006"
    assert conn.execute(
        "SELECT (SELECT array_agg(conninfo) FROM mbus.exchange_link WHERE name LIKE 'own_%%'),"
        " (SELECT count(*) FROM mbus.placement_server WHERE name = 'own_s')"
    ).fetchone() == (["service=own"], 0)


def test_the_password_rule_is_written_once() -> None:
    """Only mbus.check_conninfo holds the password patterns; the three callers call it."""
    holders = sorted(
        str(p.relative_to(FUNCTIONS))
        for p in FUNCTIONS.glob("*/*.sql")
        if re.search(r"password\[\[:space:\]\]", p.read_text("utf-8"))
    )
    assert holders == ["base/check_conninfo.sql"]
    for path in ("exchange/create_link.sql", "exchange/alter_link.sql", "scaleout/add_server.sql"):
        assert "mbus.check_conninfo(" in (FUNCTIONS / path).read_text("utf-8"), path
