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


# --- generated names ------------------------------------------------------------------------

_PARTS = (
    "post|postn|peek|deps|clear_queue|take|ack|nack|extend|bury|consume|consumen|lease|take_from"
)
# a name glued together by hand: 'post_' || q, format('consume_%s_by_%s', ...), 'q_' || q
_SQL_BUILT = re.compile(rf"'(?:{_PARTS}|q)_'\s*\|\||'(?:{_PARTS}|q)_%[sI]")
# the same in Python: "post_" + q, f"consumen_{q}_by_{c}", f"q_{q}"
_PY_BUILT = re.compile(rf"""f?["'](?:{_PARTS}|q)_(?:["']\s*\+|\{{)|_by_\{{""")


def test_no_function_or_client_builds_a_generated_name_by_hand() -> None:
    """Every generated name is made by mbus.generated_name (the formula generated_names uses)."""
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in FUNCTIONS.glob("*/*.sql")
        if p.name not in ("generated_name.sql", "generated_names.sql")
        for n, line in enumerate(p.read_text("utf-8").splitlines(), 1)
        if not line.startswith("--") and _SQL_BUILT.search(line)
    ]
    found += [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in (ROOT / "src" / "pgmbus").rglob("*.py")
        for n, line in enumerate(p.read_text("utf-8").splitlines(), 1)
        if _PY_BUILT.search(line)
    ]
    assert not found, "\n".join(found)


def test_generated_name_is_the_list_one_name_at_a_time(conn: Conn) -> None:
    conn.execute("SELECT mbus.create_queue('own_q', 1)")
    conn.execute("SELECT mbus.create_consumer('own_q', 'audit')")
    mismatched = conn.execute(
        "SELECT g.kind, g.what, g.name, mbus.generated_name(g.kind, g.what, 'own_q', c.cname)"
        " FROM (VALUES (NULL::text), ('audit')) AS c(cname),"
        " mbus.generated_names('own_q', c.cname) AS g"
        " WHERE mbus.generated_name(g.kind, g.what, 'own_q', c.cname) IS DISTINCT FROM g.name"
    ).fetchall()
    assert mismatched == []
    # the dispatchers reach the generated functions through it
    conn.execute("SELECT mbus.post('own_q', '{\"n\": 1}')")
    row = conn.execute("SELECT data FROM mbus.consume('own_q', 'audit')").fetchone()
    assert row == ({"n": 1},)
    assert _sqlstate(conn, "SELECT mbus.generated_name('nosuch', 'post', 'own_q')") == "XX000"
    assert _sqlstate(conn, "SELECT mbus.generated_name('function', 'post', NULL)") == "MB001"
