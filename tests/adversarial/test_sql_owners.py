"""One owner per SQL decision: a rule written once and used by every function that needs it,
so that the copies cannot drift apart."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from pgmbus.exchange import Bridge
from pgmbus.queues import Bus
from pgmbus.scaleout import Cluster, move_queue
from tests.exchange.test_exchange_sql import _sqlstate

Conn = psycopg.Connection[tuple[object, ...]]
ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ROOT / "src" / "pgmbus" / "sql" / "functions"


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
# a name glued together by hand: 'post_' || q, format('consume_%s_by_%s', ...), 'q_' || q,
# tbl || '$' || n (a segment), tbl || '_claim$' || n (an index)
_SQL_BUILT = re.compile(
    rf"'(?:{_PARTS}|q)_'\s*\|\||'(?:{_PARTS}|q)_%[sI]"
    r"|\|\|\s*'(?:\$[0-9]?'|_(?:claim|id|iid|lease|expires|prio)\b)"
)
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


# --- the transfer protocol of routes and queue moves ----------------------------------------


def _post_prioritized(dsn: str, qname: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT mbus.post(%s, '{\"n\": 0}')", (qname,))
        c.execute("SELECT mbus.post(%s, '{\"n\": 5}', priority => 5)", (qname,))


def _priorities(dsn: str, qname: str) -> dict[int, object]:
    """n -> the priority a consumer sees (headers.priority, absent for 0), in claim order."""
    with psycopg.connect(dsn, autocommit=True) as c:
        rows = c.execute(
            "SELECT data, headers FROM mbus.consumen(%s, 'default', 100)", (qname,)
        ).fetchall()
    return {r[0]["n"]: r[1].get("priority") for r in rows}


def test_a_route_between_databases_keeps_the_priority(make_db: Callable[..., str]) -> None:
    a_dsn, b_dsn = make_db(), make_db()
    with psycopg.connect(a_dsn, autocommit=True) as a, psycopg.connect(b_dsn, autocommit=True) as b:
        b.execute("SELECT mbus.create_queue('orders', 1)")
        a.execute("SELECT mbus.create_queue('orders', 1)")
        a.execute("SELECT mbus.create_link('peer', %s)", (b_dsn,))
        a.execute("SELECT mbus.create_route('to_peer', 'peer', 'orders', 'orders')")
    _post_prioritized(a_dsn, "orders")
    mover = Bridge(a_dsn, batch=10)
    try:
        mover.drain()
    finally:
        mover.close()
    assert mover.stats.accepted == 2
    assert list(_priorities(b_dsn, "orders").items()) == [(5, 5), (0, None)]


def test_a_queue_move_keeps_the_priority(make_db: Callable[..., str]) -> None:
    home, s1, s2 = make_db(), make_db(), make_db()
    cluster = Cluster(home, refresh=60.0)
    try:
        cluster.add_server("s1", s1)
        cluster.add_server("s2", s2)
        with psycopg.connect(s1, autocommit=True) as c:
            c.execute("SELECT mbus.create_queue('orders', 1)")
        cluster.place("queue", "orders", ["s1"])
    finally:
        cluster.close()
    _post_prioritized(s1, "orders")
    assert move_queue(home, "orders", "s2", grace=0.0).moved == 2
    assert list(_priorities(s2, "orders").items()) == [(5, 5), (0, None)]


def test_both_receiving_halves_refuse_a_null_queue_by_name(conn: Conn) -> None:
    assert _sqlstate(conn, "SELECT mbus.exchange_receive(NULL, '[]')") == "MB001"
    assert _sqlstate(conn, "SELECT mbus.move_receive('m1', NULL, '[]')") == "MB001"


def test_a_transferred_priority_must_be_a_whole_number_in_range(conn: Conn) -> None:
    conn.execute("SELECT mbus.create_queue('own_t', 1)")
    for bad in ('"5"', "5.5", "-1", "32768", "1e30", "null"):
        message = f'[{{"iid": "own_t.1@x", "data": {{}}, "priority": {bad}}}]'
        assert _sqlstate(conn, "SELECT mbus.exchange_receive('own_t', %s)", (message,)) == "MB006"
        assert _sqlstate(conn, "SELECT mbus.move_receive('m', 'own_t', %s)", (message,)) == "MB006"
    assert conn.execute("SELECT count(*) FROM mbus.q_own_t").fetchone() == (0,)


# --- queue upkeep on one clock --------------------------------------------------------------


def _upkept_at(dsn: str) -> object:
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute("SELECT upkept_at FROM mbus.queue_segment WHERE qname = 'own_u'").fetchone()
    assert row is not None
    return row[0]


def test_bus_upkeep_runs_by_the_queues_clock_not_its_own(db_dsn: str) -> None:
    """Bus consumers ask for the upkeep; it runs only when upkept_at is upkeep_every old, the
    test the claims make, so processes together run it once per upkeep_every."""
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute("SELECT mbus.create_queue('own_u', 1)")
        c.execute("UPDATE mbus.queue_segment SET upkeep_every = '1 hour' WHERE qname = 'own_u'")
        c.execute("SELECT mbus.rotate_queue('own_u')")
    fresh = _upkept_at(db_dsn)
    with Bus(db_dsn, rotate_every=0.0) as one, Bus(db_dsn, rotate_every=0.0) as other:
        for bus in (one, other, one):
            bus.consume("own_u")
        assert _upkept_at(db_dsn) == fresh  # not due: no process ran it
        with psycopg.connect(db_dsn, autocommit=True) as c:
            c.execute(
                "UPDATE mbus.queue_segment SET upkept_at = now() - interval '2 hours' "
                "WHERE qname = 'own_u'"
            )
        other.consume("own_u")
        due = _upkept_at(db_dsn)
        assert due > fresh  # type: ignore[operator]
        one.consume("own_u")
        assert _upkept_at(db_dsn) == due
        with psycopg.connect(db_dsn, autocommit=True) as c:  # NULL: the callers are the upkeep
            c.execute("UPDATE mbus.queue_segment SET upkeep_every = NULL WHERE qname = 'own_u'")
        one.consume("own_u")
        assert _upkept_at(db_dsn) > due  # type: ignore[operator]
