"""The plain post's one-statement path stores exactly what the general path stores.

``post_<q>`` of a queue whose consumers take every message (no selector, no trigger) sends a
plain message (no option, a small JSON object) through one INSERT; anything else takes the
general path. Each test posts the same message both ways (``priority => NULL`` means 0 but
takes the general path) and compares rows, counters, iids and segments.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[dict[str, Any]]

# every stored column but the ones that differ between two posts
COLUMNS = (
    "c, iid, delayed_until, expires, headers, properties, data, consume_after, attempts, "
    "lease_token, waited, priority, seg, vt = added AS due_at_post"
)


def _post(conn: Conn, queue: str, data: object, general: bool) -> str:
    sql = f"SELECT mbus.post_{queue}(%s{', priority => NULL' if general else ''}) AS iid"
    row = conn.execute(sql, (Jsonb(data),)).fetchone()
    assert row is not None
    return str(row["iid"])


def _stored(conn: Conn, queue: str, iid: str) -> list[dict[str, Any]]:
    ident = int(iid.split(".")[-1].split("@")[0])
    return conn.execute(
        f"SELECT {COLUMNS} FROM mbus.q_{queue} WHERE id = %s ORDER BY c", (ident,)
    ).fetchall()


def _counters(conn: Conn, queue: str) -> dict[str, int]:
    rows = conn.execute("SELECT * FROM mbus.queue_counters(%s)", (queue,)).fetchall()
    return {r["cname"] or "": r["posted"] for r in rows}


def _generated(conn: Conn, queue: str) -> str:
    row = conn.execute(
        "SELECT pg_get_functiondef(%s::regproc) AS body", (f"mbus.post_{queue}",)
    ).fetchone()
    assert row is not None
    return str(row["body"])


@pytest.mark.parametrize("extra_consumers", [0, 2])
def test_plain_and_general_path_store_the_same(qconn: Conn, extra_consumers: int) -> None:
    for k in range(extra_consumers):
        qconn.execute("SELECT mbus.create_consumer('jobs', %s)", (f"extra{k}",))
    db = qconn.execute("SELECT current_database() AS d").fetchone()
    assert db is not None
    before = _counters(qconn, "jobs")
    fast = _post(qconn, "jobs", {"n": 1}, general=False)
    after_fast = _counters(qconn, "jobs")
    slow = _post(qconn, "jobs", {"n": 1}, general=True)
    after_slow = _counters(qconn, "jobs")
    for iid in (fast, slow):
        assert iid.startswith("jobs.") and iid.endswith(f"@{db['d']}")
    rows_fast, rows_slow = _stored(qconn, "jobs", fast), _stored(qconn, "jobs", slow)
    assert len(rows_fast) == 1 + extra_consumers
    assert rows_fast == rows_slow
    assert all(r["iid"] is None and r["headers"] is None and r["due_at_post"] for r in rows_fast)
    # every counter (the queue's and each consumer's) moved by one on each path
    assert {k: after_fast[k] - before[k] for k in before} == dict.fromkeys(before, 1)
    assert {k: after_slow[k] - after_fast[k] for k in before} == dict.fromkeys(before, 1)
    # and both are delivered, in order, to every consumer
    for cname in ["default", *(f"extra{k}" for k in range(extra_consumers))]:
        got = qconn.execute("SELECT iid FROM mbus.consumen(%s, %s, 10)", ("jobs", cname)).fetchall()
        assert [r["iid"] for r in got] == [fast, slow]


def test_plain_post_goes_to_the_current_segment(autodb: str) -> None:
    with psycopg.connect(autodb, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("UPDATE mbus.queue_segment SET rotate_bytes = 8192, upkeep_every = NULL")
        conn.execute(
            "SELECT count(*) FROM mbus.postn_jobs(%s)",
            ([Jsonb({"pad": "x" * 200}) for _ in range(200)],),
        )
        conn.execute("SELECT mbus.rotate_queue('jobs', 1)")
        cur = conn.execute("SELECT cur FROM mbus.queue_segment WHERE qname = 'jobs'").fetchone()
        assert cur is not None and cur["cur"] != 1
        fast = _post(conn, "jobs", {"n": 1}, general=False)
        slow = _post(conn, "jobs", {"n": 2}, general=True)
        assert [r["seg"] for r in _stored(conn, "jobs", fast)] == [cur["cur"]]
        assert [r["seg"] for r in _stored(conn, "jobs", slow)] == [cur["cur"]]


def test_a_big_object_takes_the_general_path_unchanged(qconn: Conn) -> None:
    """Data of 800 bytes or more is checked in full (its depth), then stored the same."""
    data = {"deep": {"er": "x" * 900}}
    a = _post(qconn, "jobs", data, general=False)
    b = _post(qconn, "jobs", data, general=True)
    assert _stored(qconn, "jobs", a) == _stored(qconn, "jobs", b)
    assert _stored(qconn, "jobs", a)[0]["data"] == data


@pytest.mark.parametrize("data", ["null", "[1, 2]", '"text"', "7", "too-deep"])
def test_bad_data_is_refused_on_the_plain_call(qconn: Conn, data: str) -> None:
    """What the general path refuses is refused on a call without options too: NULL, a value
    that is not an object, an object nested deeper than 100 levels."""
    value: object
    if data == "too-deep":
        value = {"leaf": "x" * 900}
        for _ in range(120):
            value = {"d": value}
        param: Jsonb | None = Jsonb(value)
    else:
        param = None if data == "null" else Jsonb(json.loads(data))
    with pytest.raises(psycopg.Error) as exc, qconn.transaction():  # a savepoint
        qconn.execute("SELECT mbus.post_jobs(%s)", (param,))
    assert exc.value.sqlstate == "MB005"
    row = qconn.execute("SELECT count(*) AS n FROM mbus.q_jobs").fetchone()
    assert row == {"n": 0}


def test_selectors_and_triggers_keep_the_general_path(qconn: Conn) -> None:
    """Only queues whose consumers take every message get the one-statement path."""
    assert "INSERT INTO mbus.q_jobs AS q" in _generated(qconn, "jobs")
    qconn.execute("SELECT mbus.create_consumer('jobs', 'vip', $$(t.data->>'vip') = 'yes'$$)")
    assert "INSERT INTO mbus.q_jobs AS q" not in _generated(qconn, "jobs")
    qconn.execute("SELECT mbus.drop_consumer('jobs', 'vip')")
    assert "INSERT INTO mbus.q_jobs AS q" in _generated(qconn, "jobs")
    qconn.execute("SELECT mbus.create_queue('audit', 1)")
    qconn.execute("SELECT mbus.create_trigger('jobs', 'audit')")
    assert "INSERT INTO mbus.q_jobs AS q" not in _generated(qconn, "jobs")
    iid = _post(qconn, "jobs", {"n": 1}, general=False)
    assert len(_stored(qconn, "jobs", iid)) == 1
    got = qconn.execute("SELECT data FROM mbus.consumen('audit', 'default', 10)").fetchall()
    assert [r["data"] for r in got] == [{"n": 1}]
