"""Links, routes and the two halves of a transfer, in SQL."""

from __future__ import annotations

import json
from collections.abc import Callable

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pgmbus.errors import translate

Conn = psycopg.Connection[tuple[object, ...]]


def _sqlstate(conn: Conn, query: str, params: tuple[object, ...] = ()) -> str | None:
    conn.execute("SAVEPOINT s")
    try:
        conn.execute(query, params)
    except psycopg.Error as exc:
        conn.execute("ROLLBACK TO SAVEPOINT s")
        return translate(exc).sqlstate
    conn.execute("RELEASE SAVEPOINT s")
    return None


def test_links_refuse_bad_names_passwords_and_duplicates(conn: Conn) -> None:
    assert _sqlstate(conn, "SELECT mbus.create_link('Bad-Name', 'service=x')") == "MB001"
    assert _sqlstate(conn, "SELECT mbus.create_link('l1', '  ')") == "MB006"
    for conninfo in (
        "host=h dbname=d password=secret",
        "host=h password = secret",
        "postgresql://u:secret@h/d",
        "postgres://h/d?user=u&password=secret",
    ):
        assert _sqlstate(conn, "SELECT mbus.create_link('l1', %s)", (conninfo,)) == "MB006"
    assert _sqlstate(conn, "SELECT mbus.create_link('l1', 'host=h dbname=d user=u')") is None
    assert _sqlstate(conn, "SELECT mbus.create_link('l1', 'service=x')") == "MB003"
    assert _sqlstate(conn, "SELECT mbus.alter_link('l1', 'password=x')") == "MB006"
    assert _sqlstate(conn, "SELECT mbus.alter_link('nope', 'service=y')") == "MB002"
    conn.execute("SELECT mbus.alter_link('l1', 'service=y')")
    assert conn.execute("SELECT conninfo FROM mbus.exchange_link WHERE name = 'l1'").fetchone() == (
        "service=y",
    )
    # the table's own CHECK refuses a password written behind the functions' back
    assert (
        _sqlstate(conn, "INSERT INTO mbus.exchange_link VALUES ('l2', 'password=x host=h')")
        == "23514"
    )


def test_routes_validate_and_own_a_consumer(conn: Conn) -> None:
    conn.execute("SELECT mbus.create_queue('xq_src', 1)")
    conn.execute("SELECT mbus.create_link('peer', 'host=h dbname=d')")
    assert _sqlstate(conn, "SELECT mbus.create_route('r', 'nope', 'xq_src', 'dst')") == "MB002"
    assert _sqlstate(conn, "SELECT mbus.create_route('r', 'peer', 'nosuch', 'dst')") == "MB002"
    assert _sqlstate(conn, "SELECT mbus.create_route('r', 'peer', 'xq_src', 'Dst')") == "MB001"
    assert (
        _sqlstate(conn, "SELECT mbus.create_route('a_name_longer_than_21b', 'peer', 'xq_src', 'd')")
        == "MB001"
    )
    assert (
        _sqlstate(conn, "SELECT mbus.create_route('r', 'peer', 'xq_src', 'd', 'now() > t.added')")
        == "MB004"
    )
    conn.execute(
        "SELECT mbus.create_route('r', 'peer', 'xq_src', 'dst', $$(t.properties->>'k') = 'v'$$)"
    )
    assert _sqlstate(conn, "SELECT mbus.create_route('r', 'peer', 'xq_src', 'dst')") == "MB003"
    row = conn.execute(
        "SELECT selector FROM mbus.consumer WHERE qname = 'xq_src' AND cname = 'xr_r'"
    ).fetchone()
    assert row == ("(t.properties->>'k') = 'v'",)
    assert _sqlstate(conn, "SELECT mbus.drop_link('peer')") == "MB008"
    conn.execute("SELECT mbus.drop_route('r')")
    assert conn.execute("SELECT count(*) FROM mbus.consumer WHERE cname = 'xr_r'").fetchone() == (
        0,
    )
    assert _sqlstate(conn, "SELECT mbus.drop_route('r')") == "MB002"
    conn.execute("SELECT mbus.drop_link('peer')")
    assert _sqlstate(conn, "SELECT mbus.drop_link('peer')") == "MB002"


def test_take_then_receive_posts_once_and_refuses_loops(
    make_db: Callable[..., str],
) -> None:
    src_dsn, dst_dsn = make_db(), make_db()
    with (
        psycopg.connect(src_dsn, autocommit=True) as src,
        psycopg.connect(dst_dsn, autocommit=True) as dst,
    ):
        [(src_db,)] = src.execute("SELECT current_database()").fetchall()
        [(dst_db,)] = dst.execute("SELECT current_database()").fetchall()
        src.execute("SELECT mbus.create_queue('jobs', 1)")
        dst.execute("SELECT mbus.create_queue('inbox', 1)")
        src.execute("SELECT mbus.create_link('peer', %s)", (dst_dsn,))
        src.execute(
            "SELECT mbus.create_route('to_peer', 'peer', 'jobs', 'inbox', "
            "$$(t.data->>'n')::int % 2 = 0$$)"
        )
        for n in range(6):
            src.execute("SELECT mbus.post('jobs', jsonb_build_object('n', %s::int))", (n,))
        with src.transaction():
            [(batch,)] = src.execute("SELECT mbus.exchange_take('to_peer', 10)").fetchall()
        assert [m["data"]["n"] for m in batch] == [0, 2, 4]  # the selector, in order
        assert all(m["headers"]["seenby"] == [src_db] for m in batch)
        got = dst.execute("SELECT mbus.exchange_receive('inbox', %s)", (Jsonb(batch),)).fetchone()
        assert got == ({"accepted": 3, "duplicate": 0, "looped": 0},)
        # the same batch again (a crash between the two commits): recognised, nothing posted
        again = dst.execute("SELECT mbus.exchange_receive('inbox', %s)", (Jsonb(batch),)).fetchone()
        assert again == ({"accepted": 0, "duplicate": 3, "looped": 0},)
        # a received message is found by its (foreign) iid in its new queue
        peek = dst.execute("SELECT mbus.peek_inbox(%s)", (batch[0]["iid"],)).fetchone()
        assert peek == (True,)
        rows = dst.execute("SELECT iid, headers, data FROM mbus.consumen('inbox', 'default', 10)")
        received = rows.fetchall()
        assert [r[0] for r in received] == [m["iid"] for m in batch]
        for _, headers, _ in received:
            assert headers["seenby"] == [src_db, dst_db]
            assert headers["source_db"] == src_db
        # a message that has seen the destination never enters it again
        back = [dict(batch[0], iid="other.1@x", headers={"seenby": [dst_db, src_db]})]
        looped = dst.execute("SELECT mbus.exchange_receive('inbox', %s)", (Jsonb(back),)).fetchone()
        assert looped == ({"accepted": 0, "duplicate": 0, "looped": 1},)
        assert dst.execute(
            "SELECT count(*) FROM mbus.consumen('inbox', 'default', 10)"
        ).fetchone() == (0,)
        with pytest.raises(psycopg.Error) as info:
            dst.execute("SELECT mbus.exchange_receive('nosuch', '[]')")
        assert translate(info.value).sqlstate == "MB002"
        [(taken,)] = src.execute("SELECT mbus.exchange_take('to_peer', 10)::text").fetchall()
        assert json.loads(str(taken)) == []


def test_forget_keeps_recent_iids(conn: Conn) -> None:
    conn.execute(
        "INSERT INTO mbus.exchange_received (iid, source_db, received_at) VALUES "
        "('a.1@x', 'x', now() - interval '2 days'), ('a.2@x', 'x', now())"
    )
    assert conn.execute("SELECT mbus.exchange_forget()").fetchone() == (1,)
    assert conn.execute("SELECT iid FROM mbus.exchange_received").fetchall() == [("a.2@x",)]
    assert _sqlstate(conn, "SELECT mbus.exchange_forget('1 second')") == "MB006"
