"""The log: publish in the caller's transaction, batch and COPY publish, stored txids."""

from __future__ import annotations

import psycopg
import pytest

from pgmbus import streams
from pgmbus.errors import InvalidArgument, InvalidPayload
from tests.streams.conftest import Connect, drain


def test_publish_returns_id_and_stores_top_level_xact_id(connect: Connect) -> None:
    conn = connect()
    with conn.transaction():
        [(top,)] = conn.execute("SELECT pg_current_xact_id()::text").fetchall()
        conn.execute("SAVEPOINT s1")
        eid = streams.publish(conn, "orders", {"n": 1}, key="a", headers={"h": "v"})
        conn.execute("RELEASE SAVEPOINT s1")
        row = conn.execute(
            "SELECT txid::text, xmin::text, topic, key, payload, headers FROM mbus.events "
            "WHERE id = %s",
            (eid,),
        ).fetchone()
    assert row is not None
    txid, xmin, topic, key, payload, headers = row
    # the savepoint gave the row a subtransaction xmin; the log stores the top-level id
    assert txid == top
    assert xmin != top.split(":")[-1]
    assert (topic, key, payload, headers) == ("orders", "a", {"n": 1}, {"h": "v"})


def test_rolled_back_publish_leaves_nothing(connect: Connect) -> None:
    conn = connect()
    streams.create_group(conn, "g", start="beginning")
    conn.commit()
    with pytest.raises(RuntimeError), conn.transaction():
        streams.publish(conn, "t", {"gone": True})
        raise RuntimeError("abort")
    streams.publish(conn, "t", {"kept": True})
    conn.commit()
    assert [e.payload for e in drain(conn, "g")] == [{"kept": True}]


def test_batch_publish_keeps_order(connect: Connect) -> None:
    conn = connect()
    streams.create_group(conn, "g", start="beginning")
    ids = streams.publish_batch(
        conn, "t", [{"i": i} for i in range(50)], keys=[str(i % 3) for i in range(50)]
    )
    assert ids == sorted(ids) and len(set(ids)) == 50
    n = streams.publish_copy(conn, (("c", None, {"j": j}, {"src": "copy"}) for j in range(30)))
    assert n == 30
    conn.commit()
    events = drain(conn, "g")
    assert [e.payload for e in events] == [{"i": i} for i in range(50)] + [
        {"j": j} for j in range(30)
    ]
    assert events[1].key == "1" and events[-1].headers == {"src": "copy"}


def test_publish_validates(connect: Connect) -> None:
    conn = connect(autocommit=True)
    with pytest.raises(InvalidPayload):
        streams.publish(conn, "t", {"a": 1}, headers=["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        streams.publish(conn, "", {"a": 1})
    with pytest.raises(InvalidArgument):
        streams.publish_batch(conn, "t", [{"a": 1}, {"a": 2}], keys=["only one"])


def test_events_partitions_need_no_insert_autovacuum(connect: Connect) -> None:
    conn = connect()
    rows = conn.execute(
        "SELECT c.relname, c.reloptions FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = 'mbus.events'::regclass ORDER BY 1"
    ).fetchall()
    assert len(rows) >= 3  # the current partition and two ahead
    for _name, options in rows:
        assert "autovacuum_vacuum_insert_threshold=-1" in options


def test_publish_joins_callers_transaction_visibility(db_dsn: str, connect: Connect) -> None:
    writer = connect()
    reader = connect()
    streams.create_group(reader, "g", start="beginning")
    reader.commit()
    streams.publish(writer, "t", {"x": 1})
    assert drain(reader, "g") == []  # not committed yet
    writer.commit()
    assert [e.payload for e in drain(reader, "g")] == [{"x": 1}]
    with psycopg.connect(db_dsn) as other:
        assert other.execute("SELECT count(*) FROM mbus.events").fetchone() == (1,)


def test_pipelined_publish_many(connect: Connect) -> None:
    conn = connect()
    streams.create_group(conn, "g", start="beginning")
    ids = streams.publish_many(conn, [("t", str(i), {"i": i}, None) for i in range(20)])
    conn.commit()
    assert len(ids) == 20 and ids == sorted(ids)
    assert [e.id for e in drain(conn, "g")] == ids
