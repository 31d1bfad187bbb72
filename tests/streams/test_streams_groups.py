"""Consumer groups: the snapshot cursor rule, exactly-once commits, crashes, busy readers."""

from __future__ import annotations

import re
import threading
from typing import Any, LiteralString

import psycopg
import pytest

from pgmbus import streams
from pgmbus.errors import AlreadyExists, InvalidArgument, InvalidName, NotFound
from tests.plans import explain_to_client
from tests.streams.conftest import Connect, drain


def test_late_commit_is_read_after_it_commits_and_never_twice(connect: Connect) -> None:
    reader = connect()
    streams.create_group(reader, "g", start="beginning")
    reader.commit()
    t1, t2 = connect(), connect()
    id1 = streams.publish(t1, "t", {"from": "T1"})  # T1 publishes first and stays open
    id2 = streams.publish(t2, "t", {"from": "T2"})
    t2.commit()
    assert id1 < id2
    first = drain(reader, "g")
    assert [e.id for e in first] == [id2]  # T2 now, although T1's id is smaller
    t1.commit()
    second = drain(reader, "g")
    assert [e.id for e in second] == [id1]  # T1 after it commits: not skipped
    assert drain(reader, "g") == []  # and never twice


def test_savepoints_and_rolled_back_subtransactions(connect: Connect) -> None:
    reader = connect()
    streams.create_group(reader, "g", start="beginning")
    reader.commit()
    w = connect()
    kept = [streams.publish(w, "t", {"n": 0})]
    w.execute("SAVEPOINT a")
    kept.append(streams.publish(w, "t", {"n": 1}))
    w.execute("SAVEPOINT b")
    streams.publish(w, "t", {"n": "rolled back"})
    w.execute("ROLLBACK TO SAVEPOINT b")
    w.execute("RELEASE SAVEPOINT a")
    with w.transaction():  # a nested (savepoint) block that commits
        kept.append(streams.publish(w, "t", {"n": 2}))
    assert drain(reader, "g") == []
    w.commit()
    events = drain(reader, "g")
    assert [e.id for e in events] == kept


def test_reader_crash_between_read_and_commit_rereads(connect: Connect, db_dsn: str) -> None:
    setup = connect()
    streams.create_group(setup, "g", start="beginning")
    ids = streams.publish_batch(setup, "t", [{"i": i} for i in range(10)])
    setup.commit()
    victim = psycopg.connect(db_dsn)
    batch = streams.read_next(victim, "g", limit=4)
    assert [e.id for e in batch.events] == ids[:4]
    pid = victim.info.backend_pid
    setup.execute("SELECT pg_terminate_backend(%s)", (pid,))  # dies before commit
    setup.commit()
    victim.close()
    events = drain(connect(), "g", max_events=4)
    assert [e.id for e in events] == ids  # re-read from the start, nothing lost


def test_exactly_once_results_committed_with_the_cursor(connect: Connect) -> None:
    conn = connect()
    conn.execute("CREATE TABLE results (event_id bigint PRIMARY KEY)")
    streams.create_group(conn, "g", start="beginning")
    streams.publish_batch(conn, "t", [{"i": i} for i in range(25)])
    conn.commit()
    attempt = 0
    while True:
        attempt += 1
        with conn.transaction(force_rollback=attempt % 2 == 1):  # every other try "crashes"
            batch = streams.read_next(conn, "g", limit=10)
            if not batch:
                break
            for e in batch.events:
                conn.execute("INSERT INTO results VALUES (%s)", (e.id,))
            assert batch.cursor is not None
            streams.commit(conn, "g", batch.cursor)
    n = conn.execute("SELECT count(*), count(DISTINCT event_id) FROM results").fetchone()
    assert n == (25, 25)


def test_partial_batches_cover_a_big_transaction_once(connect: Connect) -> None:
    conn = connect()
    streams.create_group(conn, "g", start="beginning")
    conn.commit()
    late = connect()
    late_id = streams.publish(late, "t", {"late": True})
    ids = streams.publish_batch(conn, "t", [{"i": i} for i in range(95)])
    conn.commit()
    got = drain(conn, "g", max_events=10)
    assert [e.id for e in got] == ids
    late.commit()
    assert [e.id for e in drain(conn, "g", max_events=10)] == [late_id]


def test_the_largest_limit_reads_everything(connect: Connect) -> None:
    # read_next looks one row past the batch: max_events + 1 must not overflow an integer
    conn = connect()
    streams.create_group(conn, "g", start="beginning")
    ids = streams.publish_batch(conn, "t", [{"i": i} for i in range(5)])
    conn.commit()
    batch = streams.read_next(conn, "g", limit=2**31 - 1)
    assert [e.id for e in batch.events] == ids
    assert batch.cursor is not None
    streams.commit(conn, "g", batch.cursor)
    conn.commit()
    assert len(streams.read_next(conn, "g", limit=2**31 - 1)) == 0


def test_own_events_published_after_reading_are_not_skipped(connect: Connect) -> None:
    conn = connect()
    streams.create_group(conn, "g", start="beginning")
    streams.publish(conn, "t", {"first": 1})
    conn.commit()
    with conn.transaction():
        batch = streams.read_next(conn, "g")
        assert len(batch) == 1 and batch.cursor
        # the consumer publishes follow-up events in the same transaction as its commit
        follow = streams.publish(conn, "t", {"follow": 1})
        streams.commit(conn, "g", batch.cursor)
    assert [e.id for e in drain(conn, "g")] == [follow]


def test_second_reader_waits_or_skips(connect: Connect) -> None:
    a, b = connect(), connect()
    streams.create_group(a, "g", start="beginning")
    streams.publish(a, "t", {"x": 1})
    a.commit()
    first = streams.read_next(a, "g")  # a holds the group's lock in its open transaction
    assert len(first) == 1
    # on_busy='wait': b blocks until a's transaction ends
    done = threading.Event()
    result: list[int] = []

    def read_b() -> None:
        result.append(len(streams.read_next(b, "g")))
        b.commit()
        done.set()

    t = threading.Thread(target=read_b)
    t.start()
    assert not done.wait(0.5)
    assert first.cursor
    streams.commit(a, "g", first.cursor)
    a.commit()
    t.join(10)
    assert result == [0]  # a committed the batch: b gets nothing twice
    # on_busy='skip': b gets nothing at once while a reads
    streams.configure_group(a, "g", on_busy="skip")
    streams.publish(a, "t", {"x": 2})
    a.commit()
    assert len(streams.read_next(a, "g")) == 1
    assert len(streams.read_next(b, "g")) == 0
    b.commit()
    a.rollback()
    assert len(streams.read_next(b, "g")) == 1


def test_commit_behind_is_refused_and_repeat_is_harmless(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g", start="beginning")
    streams.publish(conn, "t", {"x": 1})
    old = streams.read_next(conn, "g")
    assert old.cursor
    streams.commit(conn, "g", old.cursor)
    streams.commit(conn, "g", old.cursor)  # same cursor again: no-op
    streams.publish(conn, "t", {"x": 2})
    newer = streams.read_next(conn, "g")
    assert newer.cursor
    streams.commit(conn, "g", newer.cursor)
    with pytest.raises(InvalidArgument, match="behind"):
        streams.commit(conn, "g", old.cursor)
    with pytest.raises(InvalidArgument, match="malformed"):
        streams.commit(conn, "g", "not a cursor")


def test_group_lifecycle_errors(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g")
    with pytest.raises(AlreadyExists):
        streams.create_group(conn, "g")
    with pytest.raises(InvalidName):
        streams.create_group(conn, "Bad-Name")
    with pytest.raises(InvalidArgument):
        streams.create_group(conn, "h", start="not a time")
    streams.drop_group(conn, "g")
    with pytest.raises(NotFound):
        streams.read_next(conn, "g")
    with pytest.raises(NotFound):
        streams.drop_group(conn, "g")


def test_start_positions(connect: Connect) -> None:
    conn = connect(autocommit=True)
    before = streams.publish(conn, "t", {"n": "before"})
    [(mark,)] = conn.execute("SELECT clock_timestamp()").fetchall()
    after = streams.publish(conn, "t", {"n": "after"})
    streams.create_group(conn, "from_now")
    streams.create_group(conn, "from_start", start="beginning")
    streams.create_group(conn, "from_time", start=mark.isoformat())
    streams.create_group(conn, "from_id", start=str(after))
    last = streams.publish(conn, "t", {"n": "last"})
    assert [e.id for e in drain(conn, "from_now")] == [last]
    assert [e.id for e in drain(conn, "from_start")] == [before, after, last]
    assert [e.id for e in drain(conn, "from_time")] == [after, last]
    assert [e.id for e in drain(conn, "from_id")] == [after, last]
    streams.seek(conn, "from_now", "beginning")
    assert [e.id for e in drain(conn, "from_now")] == [before, after, last]


def test_topic_filter(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g", start="beginning")
    streams.configure_group(conn, "g", topics=["a"])
    ida = streams.publish(conn, "a", {})
    streams.publish(conn, "b", {})
    assert [e.id for e in drain(conn, "g")] == [ida]


def test_an_open_transaction_delays_only_its_own_events(connect: Connect) -> None:
    conn = connect()
    streams.create_group(conn, "g", start="beginning")
    conn.commit()
    long = connect()
    held = streams.publish(long, "t", {"held": True})
    for round_ in range(3):
        mine = streams.publish_batch(conn, "t", [{"r": round_, "i": i} for i in range(3)])
        conn.commit()
        assert [e.id for e in drain(conn, "g", max_events=2)] == mine  # at once, every round
    long.commit()
    assert [e.id for e in drain(conn, "g")] == [held]


def test_batch_query_uses_the_txid_index(connect: Connect) -> None:
    conn = connect()
    for _ in range(5):
        streams.publish_batch(conn, "t", [{"i": i} for i in range(1000)])
        conn.commit()
    conn.execute("ANALYZE mbus.events")
    plan = "\n".join(
        r[0]
        for r in conn.execute(
            "EXPLAIN SELECT * FROM mbus.events AS e WHERE e.txid >= %s::xid8 "
            "AND e.txid < pg_snapshot_xmax(pg_current_snapshot()) "
            "AND (e.txid, e.id) > (%s::xid8, -1::bigint) "
            "AND pg_visible_in_snapshot(e.txid, pg_current_snapshot()) "
            "ORDER BY e.txid, e.id LIMIT 1001",
            ("3", "3"),
        )
    )
    assert "txid_id" in plan and "Sort" not in plan.split("Merge Append")[0]


def test_ordered_group_waits_for_earlier_transactions(connect: Connect) -> None:
    # the Wiki PubSub design document's option: refuse out-of-order events, get them in write order
    conn = connect()
    streams.create_group(conn, "ordered", start="beginning")
    streams.create_group(conn, "fast", start="beginning")
    streams.configure_group(conn, "ordered", ordered=True)
    conn.commit()
    t1, t2 = connect(), connect()
    first = streams.publish(t1, "t", {"n": 1})
    second = streams.publish(t2, "t", {"n": 2})
    t2.commit()
    assert [e.id for e in drain(conn, "fast")] == [second]
    assert drain(conn, "ordered") == []  # T1 started first and is still open
    t1.commit()
    assert [e.id for e in drain(conn, "fast")] == [first]
    assert [e.id for e in drain(conn, "ordered")] == [first, second]


def test_commit_transaction_commits_cursor_and_transaction_together(connect: Connect) -> None:
    conn = connect()
    streams.create_group(conn, "g", start="beginning")
    streams.publish_batch(conn, "t", [{"i": i} for i in range(3)])
    conn.commit()
    batch = streams.read_next(conn, "g")
    assert batch.cursor
    conn.execute("CREATE TABLE r (n int)")
    conn.execute("INSERT INTO r VALUES (3)")
    streams.commit_transaction(conn, "g", batch.cursor)
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert streams.read_next(conn, "g").events == []
    assert conn.execute("SELECT n FROM r").fetchall() == [(3,)]
    conn.rollback()
    with pytest.raises(InvalidArgument):
        streams.commit_transaction(conn, "g", "garbage")


def test_read_next_scans_the_index_in_order_even_with_stale_statistics(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g", start="beginning")
    streams.publish(conn, "t", {})
    conn.execute("ANALYZE mbus.events")  # statistics from a near-empty log
    for _ in range(5):
        streams.publish_batch(conn, "t", [{"i": i} for i in range(1000)])
    plans = explain_to_client(conn)
    assert len(streams.read_next(conn, "g", limit=10)) == 10
    batch_plans = [p for p in plans if "events_txid_id" in p or "txid_id_idx" in p]
    assert batch_plans, plans
    assert not any("Bitmap Heap Scan" in p or "Seq Scan on events" in p for p in batch_plans)


_HELPER_PLANS: dict[str, LiteralString] = {
    "lock key": "EXPLAIN VERBOSE SELECT mbus._reader_lock_key(c.group_name, c.slot)"
    " FROM mbus.stream_cursors AS c",
    "position": "EXPLAIN VERBOSE SELECT mbus._format_position("
    "ROW(c.lo, c.hi, c.after_txid, c.after_id)::mbus.stream_position)"
    " FROM mbus.stream_cursors AS c",
    "slot position": "EXPLAIN VERBOSE SELECT mbus._format_position("
    "ROW(c.lo, c.hi, c.after_txid, c.after_id)::mbus.stream_position, c.slot)"
    " FROM mbus.stream_cursors AS c",
}


@pytest.mark.parametrize("helper", sorted(_HELPER_PLANS))
def test_read_path_helpers_are_inlined(connect: Connect, helper: str) -> None:
    # An SQL helper that is not inlined is planned again on every call (read_next and commit
    # call these once per batch); a stable operator in an IMMUTABLE body stops the inlining.
    conn = connect()
    plan = "\n".join(str(r[0]) for r in conn.execute(_HELPER_PLANS[helper]))
    output = [line for line in plan.splitlines() if "Output:" in line]
    assert output and not any("mbus._" in line for line in output), plan


def test_format_position_matches_the_cursor_grammar(connect: Connect) -> None:
    conn = connect()
    rows = conn.execute(
        "SELECT mbus._format_position(ROW('10:20:12,15', NULL, NULL, NULL)::mbus.stream_position),"
        " mbus._format_position(ROW('10:20:12,15', '30:31:', '17', 42)::mbus.stream_position, 3),"
        " mbus._format_position(ROW('10:20:', '30:30:', NULL, NULL)::mbus.stream_position)"
    ).fetchone()
    assert rows == ("10:20:12,15", "3@10:20:12,15;30:31:;17;42", "10:20:;30:30:")


def _batch_buffers(conn: psycopg.Connection[Any], group: str, limit: int) -> tuple[int, int]:
    """Read ``limit`` events (not committed): how many came back, and the most buffers one of
    read_next's batch scans touched (auto_explain with BUFFERS)."""
    plans = explain_to_client(conn, analyze=True)
    got = len(streams.read_next(conn, group, limit=limit))
    conn.execute("SET auto_explain.log_min_duration = -1")
    hits = [
        int(m.group(1))
        for p in plans
        if "txid_id_idx" in p
        for m in [re.search(r"Buffers: shared hit=(\d+)", p)]
        if m
    ]
    assert hits, plans
    return got, max(hits)


def test_a_long_transaction_read_in_pieces_is_not_walked_from_its_start(
    connect: Connect,
) -> None:
    # A transaction still open when the group's position was taken is read through the list
    # of ended transactions. Read in pieces, each piece must start at the position inside it,
    # not at the transaction's first event (a walk that grew with every piece).
    conn, long_tx = connect(), connect()
    streams.create_group(conn, "g", start="now")
    conn.commit()
    streams.publish_batch(long_tx, "t", [{"i": i} for i in range(30_000)])  # held open
    streams.publish(conn, "t", {"first": True})
    conn.commit()
    assert len(drain(conn, "g")) == 1  # the group's position now has long_tx in progress
    long_tx.commit()
    for _ in range(5):  # 25,000 events into the long transaction
        with conn.transaction():
            batch = streams.read_next(conn, "g", limit=5_000)
            assert batch.cursor is not None and len(batch) == 5_000
            streams.commit(conn, "g", batch.cursor)
    got, buffers = _batch_buffers(conn, "g", 10)
    conn.rollback()  # not committed: the drain below reads these again
    assert got == 10
    # from the position: a few index pages and one heap page; from the start: 25,000 index
    # entries, about 100 pages
    assert buffers < 30, buffers
    assert len(drain(conn, "g", max_events=2_000)) == 5_000
