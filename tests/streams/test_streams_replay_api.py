"""The replay API a Spark source builds on: current_cursor, group_cursor, read_between."""

from __future__ import annotations

from pgmbus import streams
from tests.streams.conftest import Connect


def test_read_between_is_a_pure_function_of_cursors(connect: Connect) -> None:
    conn = connect(autocommit=True)
    c0 = streams.current_cursor(conn)
    late = connect()
    late_id = streams.publish(late, "t", {"late": True}, key="k")  # open across c1
    a = streams.publish(conn, "t", {"n": 1}, key="a")
    b = streams.publish(conn, "u", {"n": 2}, key="b")
    c1 = streams.current_cursor(conn)
    late.commit()
    c = streams.publish(conn, "t", {"n": 3}, key="c")
    c2 = streams.current_cursor(conn)

    first = [e.id for e in streams.read_between(conn, c0, c1)]
    second = [e.id for e in streams.read_between(conn, c1, c2)]
    assert first == [a, b]
    assert second == [late_id, c]  # the late transaction lands in the range where it committed
    # replaying the same range gives the same events, whatever happened since
    streams.publish(conn, "t", {"n": 4})
    assert [e.id for e in streams.read_between(conn, c0, c1)] == first
    assert [e.id for e in streams.read_between(conn, c0, c2)] == sorted(first + second)
    # topic and slot filters partition the range
    assert [e.id for e in streams.read_between(conn, c0, c2, topics=["u"])] == [b]
    parts = [{e.id for e in streams.read_between(conn, c0, c2, slot=s, nslots=3)} for s in range(3)]
    assert set().union(*parts) == set(first + second)
    assert sum(len(p) for p in parts) == len(first + second)


def test_group_cursor_and_commit_of_a_current_cursor(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "spark", start="beginning")
    start = streams.group_cursor(conn, "spark")
    ids = streams.publish_batch(conn, "t", [{"i": i} for i in range(5)])
    end = streams.current_cursor(conn)
    assert [e.id for e in streams.read_between(conn, start, end)] == ids
    streams.commit(conn, "spark", end)  # a source's commit(end) moves the group
    assert streams.group_cursor(conn, "spark") == end
    assert streams.read_next(conn, "spark").events == []


def test_partial_group_cursor_works_in_read_between(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g", start="beginning")
    ids = streams.publish_batch(conn, "t", [{"i": i} for i in range(10)])
    batch = streams.read_next(conn, "g", limit=4)
    assert batch.cursor and ";" in batch.cursor  # a position inside a batch
    streams.commit(conn, "g", batch.cursor)
    mid = streams.group_cursor(conn, "g")
    now = streams.current_cursor(conn)
    assert [e.id for e in streams.read_between(conn, "1:1:", mid)] == ids[:4]
    assert [e.id for e in streams.read_between(conn, mid, now)] == ids[4:]
