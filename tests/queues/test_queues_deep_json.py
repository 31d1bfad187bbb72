"""JSON nested too deep for clients to read back is refused where it enters (MB005), so no
claim can commit rows that its reader then fails on."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from pgmbus import streams
from pgmbus.errors import InvalidPayload
from pgmbus.queues import Bus


def nested(depth: int) -> dict[str, Any]:
    """An object whose containers nest ``depth`` levels (the object itself is level 1)."""
    value: Any = []
    for _ in range(depth - 2):
        value = [value]
    return {"a": value}


def assert_refused_storing_nothing(
    conn: psycopg.Connection[Any], call: str, params: dict[str, Any]
) -> None:
    """``call`` fails with MB005 naming the rule, and no message or event exists."""
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(call, params or None)
    assert caught.value.sqlstate == "MB005"
    assert "100 levels" in str(caught.value)
    counts = conn.execute(
        "SELECT (SELECT count(*) FROM mbus.q_jobs), (SELECT count(*) FROM mbus.events)"
    ).fetchone()
    assert counts == (0, 0)


def test_json_too_deep_draws_the_line_at_100_levels(autodb: str) -> None:
    with psycopg.connect(autodb) as conn:
        for depth, deep in ((100, False), (101, True), (600, True)):
            row = conn.execute(
                "SELECT mbus.json_too_deep(%s::jsonb)", (json.dumps(nested(depth)),)
            ).fetchone()
            assert row == (deep,), depth
        wide = {f"k{i}": [[[i]]] for i in range(500)}  # big, not deep: walked, passes
        cur = conn.execute("SELECT mbus.json_too_deep(%s::jsonb)", (json.dumps(wide),))
        assert cur.fetchone() == (False,)


@pytest.mark.parametrize(
    "call",
    [
        "SELECT mbus.post_jobs(%(v)s::jsonb)",
        "SELECT mbus.post_jobs('{}', headers => %(v)s::jsonb)",
        "SELECT mbus.post_jobs('{}', properties => %(v)s::jsonb)",
        "SELECT mbus.postn_jobs(ARRAY['{}'::jsonb, %(v)s::jsonb])",
        "SELECT mbus.post('jobs', %(v)s::jsonb)",
        "SELECT mbus.publish('t', %(v)s::jsonb)",
        "SELECT mbus.publish('t', '{}', headers => %(v)s::jsonb)",
        "SELECT mbus.publish_batch('t', ARRAY['{}'::jsonb, %(v)s::jsonb])",
    ],
)
def test_a_deep_message_or_event_is_refused_and_stores_nothing(autodb: str, call: str) -> None:
    with psycopg.connect(autodb, autocommit=True) as conn:
        assert_refused_storing_nothing(conn, call, {"v": json.dumps(nested(300))})
        conn.execute(call, {"v": json.dumps(nested(100))})  # the limit itself is fine


@pytest.mark.parametrize(
    "call",
    [
        "SELECT mbus.post_jobs(s.j) FROM src AS s",  # the plain post's one statement
        "SELECT mbus.post_jobs(s.j, priority => NULL) FROM src AS s",  # the general path
        "SELECT mbus.post_jobs('{}', headers => s.j) FROM src AS s",
        "SELECT mbus.post_jobs('{}', properties => s.j) FROM src AS s",
        "SELECT mbus.postn_jobs(ARRAY['{}'::jsonb, s.j]) FROM src AS s",
        "SELECT mbus.publish('t', s.j) FROM src AS s",
        "SELECT mbus.publish('t', '{}', headers => s.j) FROM src AS s",
        "SELECT mbus.publish_batch('t', ARRAY['{}'::jsonb, s.j]) FROM src AS s",
    ],
)
def test_a_deep_value_compressed_in_a_table_is_refused_too(autodb: str, call: str) -> None:
    """A value read from a table column comes compressed, and pg_column_size gives its
    compressed size: 150 levels take ~500 bytes there. The size shortcut must not skip it."""
    with psycopg.connect(autodb, autocommit=True) as conn:
        conn.execute("CREATE TABLE src (j jsonb)")
        value: Any = 1
        for _ in range(150):  # objects: over 2 kB as text, so a table compresses them
            value = {"a": value}
        conn.execute("INSERT INTO src VALUES (%s::jsonb)", (json.dumps(value),))
        stored = conn.execute(
            "SELECT pg_column_size(j), pg_column_compression(j) FROM src"
        ).fetchone()
        assert stored is not None and stored[0] < 800 and stored[1] is not None  # the trap
        assert_refused_storing_nothing(conn, call, {})


def test_the_bus_refuses_it_with_a_typed_error_and_a_batch_stays_readable(autodb: str) -> None:
    with Bus(autodb) as bus:
        with pytest.raises(InvalidPayload, match="100 levels"):
            bus.post("jobs", nested(300))
        bus.post("jobs", nested(100))
        (got,) = bus.consume("jobs", limit=10)
        assert got.data == nested(100)
    with (
        psycopg.connect(autodb, autocommit=True) as conn,
        pytest.raises(InvalidPayload, match="100 levels"),
    ):
        streams.publish(conn, "t", nested(300))
