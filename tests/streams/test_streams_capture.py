"""Change capture: triggers publish row changes in the writing transaction (the designs' cases)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from pgmbus import streams
from pgmbus.errors import InvalidArgument, NotFound
from tests.streams.conftest import Connect, drain


def _setup(conn: psycopg.Connection[Any], **kw: Any) -> None:
    conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text, price numeric, note text)")
    streams.capture_table(conn, "items", **kw)
    streams.create_group(conn, "cdc", start="now")
    conn.commit()


def test_insert_update_delete_truncate(connect: Connect) -> None:
    conn = connect()
    _setup(conn)
    conn.execute("INSERT INTO items VALUES (1, 'a', 10, NULL), (2, 'b', 20, NULL)")
    conn.execute("UPDATE items SET price = 11 WHERE id = 1")
    conn.execute("UPDATE items SET id = 3 WHERE id = 2")
    conn.execute("UPDATE items SET name = name")  # nothing changed: no event
    conn.execute("DELETE FROM items WHERE id = 1")
    conn.execute("TRUNCATE items")
    conn.commit()
    events = drain(conn, "cdc")
    assert all(e.topic == "items" for e in events)
    ops = [(e.payload["op"], e.key) for e in events]
    assert ops == [
        ("insert", "1"),
        ("insert", "2"),
        ("update", "1"),
        ("update", "3"),
        ("delete", "1"),
        ("truncate", None),
    ]
    assert events[0].payload["row"] == {"id": 1, "name": "a", "price": 10, "note": None}
    assert events[0].payload["table"] == "public.items"
    assert events[2].payload["changed"] == ["price"]
    assert events[2].payload["row"]["price"] == 11
    assert events[3].payload["old_key"] == {"id": 2} and events[3].payload["key"] == {"id": 3}
    assert events[4].payload["row"]["id"] == 1


def test_columns_and_topic(connect: Connect) -> None:
    conn = connect()
    _setup(conn, topic="catalog.items", columns=["price"])
    conn.execute("INSERT INTO items VALUES (1, 'a', 10, 'n')")
    conn.execute("UPDATE items SET note = 'only a non-captured column'")
    conn.execute("UPDATE items SET price = 12")
    conn.commit()
    events = drain(conn, "cdc")
    assert [e.topic for e in events] == ["catalog.items"] * 2
    assert events[0].payload["row"] == {"id": 1, "price": 10}
    assert events[1].payload["changed"] == ["price"]
    with pytest.raises(InvalidArgument, match="no column"):
        streams.capture_table(conn, "items", columns=["nope"])
    conn.rollback()


def test_copy_on_conflict_and_bulk_statements(connect: Connect) -> None:
    conn = connect()
    _setup(conn)
    with conn.cursor() as cur, cur.copy("COPY items (id, name, price) FROM STDIN") as copy:
        for i in range(100):
            copy.write_row((i, f"n{i}", i))
    conn.execute(
        "INSERT INTO items (id, name, price) SELECT i, 'upsert', 0 FROM generate_series(95, 104) i "
        "ON CONFLICT (id) DO UPDATE SET name = excluded.name"
    )
    conn.execute("UPDATE items SET price = price + 1 WHERE id < 50")
    conn.commit()
    events = drain(conn, "cdc")
    ops = [e.payload["op"] for e in events]
    assert ops.count("insert") == 105 and ops.count("update") == 55


def test_frequent_changes_lose_no_intermediate_state(connect: Connect) -> None:
    # the change-log design's pitfall 2: a row changed often must not overwrite its pending change
    conn = connect()
    _setup(conn)
    conn.execute("INSERT INTO items VALUES (1, 'v0', 0, NULL)")
    conn.commit()
    for v in range(1, 21):
        conn.execute("UPDATE items SET name = %s WHERE id = 1", (f"v{v}",))
        conn.commit()
    names = [e.payload["row"]["name"] for e in drain(conn, "cdc")]
    assert names == [f"v{v}" for v in range(21)]


def test_changes_readable_in_commit_order_without_a_background_job(connect: Connect) -> None:
    # the change-log design's pitfall 1: no sequence-filling job, no rows appearing "in the past"
    conn = connect()
    _setup(conn)
    conn.execute("INSERT INTO items VALUES (1, 'a', 0, NULL), (2, 'b', 0, NULL)")
    conn.commit()
    drain(conn, "cdc")
    slow, fast = connect(), connect()
    slow.execute("UPDATE items SET name = 'slow' WHERE id = 1")
    fast.execute("UPDATE items SET name = 'fast' WHERE id = 2")
    fast.commit()
    assert [e.payload["row"]["name"] for e in drain(conn, "cdc")] == ["fast"]
    slow.commit()
    assert [e.payload["row"]["name"] for e in drain(conn, "cdc")] == ["slow"]


def test_changes_roll_back_with_the_writer(connect: Connect) -> None:
    conn = connect()
    _setup(conn)
    conn.execute("INSERT INTO items VALUES (1, 'a', 0, NULL)")
    conn.rollback()
    assert drain(conn, "cdc") == []


@pytest.mark.parametrize(
    "ddl",
    [
        "ALTER TABLE items RENAME COLUMN price TO cost",  # a captured column
        "ALTER TABLE items RENAME COLUMN id TO item_id",  # the key
        "ALTER TABLE items DROP COLUMN price",
    ],
)
def test_a_renamed_or_dropped_captured_column_refuses_writes_until_captured_again(
    connect: Connect, ddl: str
) -> None:
    """Main: after the RENAME, inserts published null keys and empty rows, updates of the
    renamed column (and of the key) published nothing, silently. Now the write is refused
    (MB008, naming the column) until capture_table runs with the current names."""
    conn = connect()
    _setup(conn, columns=["price"])
    conn.execute(ddl)
    conn.commit()
    key = "item_id" if "item_id" in ddl else "id"
    insert = f"INSERT INTO items ({key}, name) VALUES (%s, 'e')"
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(insert, (1,))
    assert caught.value.sqlstate == "MB008"
    conn.rollback()
    columns = ["cost"] if "cost" in ddl else None if "DROP" in ddl else ["price"]
    streams.capture_table(conn, "items", columns=columns)
    conn.commit()
    conn.execute(insert, (5,))
    conn.commit()
    (event,) = drain(conn, "cdc")
    assert event.key == "5" and event.payload["key"] == {key: 5}


def test_the_refusal_names_the_column(connect: Connect) -> None:
    conn = connect()
    _setup(conn, columns=["price"])
    conn.execute("ALTER TABLE items RENAME COLUMN price TO cost")
    conn.commit()
    with pytest.raises(psycopg.Error, match="price renamed or dropped") as caught:
        conn.execute("INSERT INTO items VALUES (1, 'a', 1, NULL)")
    assert caught.value.sqlstate == "MB008"
    conn.rollback()
    assert drain(conn, "cdc") == []


def test_a_row_nested_too_deep_for_its_event_is_refused(connect: Connect) -> None:
    """Published, the change would stop every reader of the group (readers cannot read JSON
    nested over 100 levels back); the write is refused instead, and other writes go on."""
    conn = connect()
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body jsonb)")
    streams.capture_table(conn, "docs")
    streams.create_group(conn, "cdc", start="now")
    conn.commit()
    deep = "(repeat('[', %s) || repeat(']', %s))::jsonb"
    with pytest.raises(psycopg.Error, match="nested too deep") as caught:
        conn.execute(f"INSERT INTO docs VALUES (1, {deep})", (400, 400))
    assert caught.value.sqlstate == "MB005"
    conn.rollback()
    conn.execute(f"INSERT INTO docs VALUES (2, {deep})", (90, 90))  # 92 levels with the payload
    conn.commit()
    with pytest.raises(psycopg.Error, match="nested too deep"):
        conn.execute(f"UPDATE docs SET body = {deep} WHERE id = 2", (1500, 1500))
    conn.rollback()
    (event,) = drain(conn, "cdc")
    assert event.key == "2" and event.payload["op"] == "insert"
    assert conn.execute("SELECT count(*) FROM docs").fetchone() == (1,)


def test_stop_capture(connect: Connect) -> None:
    conn = connect()
    _setup(conn)
    streams.stop_capture(conn, "items")
    conn.execute("INSERT INTO items VALUES (1, 'a', 0, NULL)")
    conn.commit()
    assert drain(conn, "cdc") == []
    with pytest.raises(NotFound):
        streams.stop_capture(conn, "items")


def test_writer_without_rights_on_mbus_still_publishes(connect: Connect, db_dsn: str) -> None:
    conn = connect(autocommit=True)
    _setup(conn)
    conn.execute("DROP ROLE IF EXISTS app_writer")
    conn.execute("CREATE ROLE app_writer LOGIN")
    conn.execute("GRANT ALL ON items TO app_writer")
    try:
        with psycopg.connect(db_dsn, user="app_writer") as app:
            app.execute("INSERT INTO items VALUES (7, 'x', 1, NULL)")
            app.commit()
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                app.execute("SELECT count(*) FROM mbus.events")
        assert [e.key for e in drain(conn, "cdc")] == ["7"]
    finally:
        conn.execute("DROP OWNED BY app_writer")
        conn.execute("DROP ROLE app_writer")
