"""postn_<q> of a queue with one consumer taking every message (no selector, no trigger) is
one INSERT; it must store, count and return what the general form stores for that consumer.

The same batches go to queue ``solo`` (the single-INSERT form) and to queue ``duo`` (the same
consumer plus a second one: the general form, one CTE per consumer); the rows of consumer
``default``, the iids' order and the counters are compared.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[dict[str, Any]]

COLUMNS = (
    "delayed_until, expires, headers - 'enqueue_time' AS headers, properties, data, "
    "consume_after, attempts, lease_token, waited, priority, seg, vt = added AS due_at_post, "
    "iid IS NULL AS own_iid"
)


@pytest.fixture
def conn(shared_dsn: str) -> Any:
    with psycopg.connect(shared_dsn, row_factory=dict_row) as connection:
        try:
            connection.execute("SELECT mbus.create_queue('solo', 1)")
            connection.execute("SELECT mbus.create_queue('duo', 1)")
            connection.execute("SELECT mbus.create_consumer('duo', 'second')")
            yield connection
        finally:
            connection.rollback()


def _postn(conn: Conn, queue: str, n: int, **options: Any) -> list[str]:
    data = [Jsonb({"n": k}) for k in range(n)]
    args = ", ".join(f"{name} => %({name})s" for name in options)
    rows = conn.execute(
        f"SELECT * FROM mbus.postn_{queue}(%(data)s{', ' if args else ''}{args}) AS iid",
        {"data": data, **options},
    ).fetchall()
    return [str(r["iid"]) for r in rows]


def _counters(conn: Conn, queue: str) -> dict[str, int]:
    rows = conn.execute("SELECT * FROM mbus.queue_counters(%s)", (queue,)).fetchall()
    return {r["cname"] or "": r["posted"] for r in rows}


def _stored(conn: Conn, queue: str) -> list[dict[str, Any]]:
    return conn.execute(
        f"SELECT {COLUMNS} FROM mbus.q_{queue} AS q JOIN mbus.consumer AS c ON c.cid = q.c "
        "WHERE c.cname = 'default' ORDER BY q.id"
    ).fetchall()


def test_the_single_form_is_the_one_generated(conn: Conn) -> None:
    solo = conn.execute("SELECT pg_get_functiondef('mbus.postn_solo'::regproc) AS b").fetchone()
    duo = conn.execute("SELECT pg_get_functiondef('mbus.postn_duo'::regproc) AS b").fetchone()
    assert solo is not None and duo is not None
    assert "MATERIALIZED" not in solo["b"] and "MATERIALIZED" in duo["b"]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"headers": [Jsonb({"trace": k}) for k in range(30)]},
        {"properties": [Jsonb({"p": k}) for k in range(30)], "priority": list(range(30))},
        {"delayed_until": "2100-01-01 00:00+00", "expires": "2200-01-01 00:00+00"},
    ],
)
def test_single_and_general_form_store_count_and_return_the_same(
    conn: Conn, options: dict[str, Any]
) -> None:
    before = {q: _counters(conn, q) for q in ("solo", "duo")}
    iids = {q: _postn(conn, q, 30, **options) for q in ("solo", "duo")}
    for queue, got in iids.items():
        ids = [int(i.split(".")[1].split("@")[0]) for i in got]
        assert len(got) == 30 and all(i.startswith(f"{queue}.") for i in got)
        assert ids == sorted(ids)  # in the order of data
        after = _counters(conn, queue)
        assert {k: after[k] - before[queue][k] for k in after} == dict.fromkeys(after, 30)
    stored = {q: _stored(conn, q) for q in ("solo", "duo")}
    assert [r["data"] for r in stored["solo"]] == [{"n": k} for k in range(30)]
    for queue, rows in stored.items():  # stamped headers name each queue as the destination
        for row in rows:
            if row["headers"] is not None:
                assert row["headers"].pop("destination") == queue
    assert stored["solo"] == stored["duo"]


def test_a_bad_element_is_refused_and_nothing_is_stored(conn: Conn) -> None:
    deep: Any = {"x": 1}
    for _ in range(120):
        deep = {"d": deep}
    for bad, code in (([Jsonb({"a": 1}), Jsonb([1])], "MB005"), ([Jsonb(deep)], "MB005")):
        conn.execute("SAVEPOINT s")
        with pytest.raises(psycopg.Error) as info:
            conn.execute("SELECT * FROM mbus.postn_solo(%s)", (bad,))
        assert info.value.sqlstate == code
        conn.execute("ROLLBACK TO SAVEPOINT s")
    row = conn.execute("SELECT count(*) AS n FROM mbus.q_solo").fetchone()
    assert row == {"n": 0}
