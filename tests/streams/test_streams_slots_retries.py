"""Parallel slots of one group; per-event retry with backoff and dead letters."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from pgmbus import streams
from pgmbus.errors import InvalidArgument, NotFound
from tests.streams.conftest import Connect, drain


def test_slots_split_a_group_by_key_and_read_in_parallel(connect: Connect, db_dsn: str) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "par", start="beginning", slots=4)
    ids = streams.publish_batch(
        conn, "t", [{"i": i} for i in range(200)], keys=[f"k{i % 17}" for i in range(200)]
    )
    with pytest.raises(InvalidArgument, match="slots"):
        streams.read_next(conn, "par")
    with pytest.raises(InvalidArgument, match="out of range"):
        streams.read_next(conn, "par", slot=4)
    # four workers at once, each with its own slot: none waits for another
    results: dict[int, list[streams.Event]] = {}
    holders = [psycopg.connect(db_dsn) for _ in range(4)]
    try:
        batches = [
            streams.read_next(h, "par", limit=1000, slot=s) for s, h in enumerate(holders)
        ]  # all four hold their slot's lock at the same time
        for s, (h, b) in enumerate(zip(holders, batches, strict=True)):
            assert b.cursor is not None and b.cursor.startswith(f"{s}@")
            streams.commit(h, "par", b.cursor)
            h.commit()
            results[s] = b.events
    finally:
        for h in holders:
            h.close()
    all_ids = sorted(e.id for evs in results.values() for e in evs)
    assert all_ids == ids
    key_slots: dict[str | None, int] = {}
    for s, evs in results.items():
        for e in evs:
            assert key_slots.setdefault(e.key, s) == s  # one key, one slot: per-key order holds
    assert all(results.values())
    assert all(drain(conn, "par", slot=s) == [] for s in range(4))


def test_one_bad_event_does_not_stop_the_stream(connect: Connect) -> None:
    conn = connect()
    streams.create_group(conn, "g", start="beginning")
    streams.configure_group(conn, "g", max_attempts=3, retry_backoff=timedelta(seconds=0))
    ids = streams.publish_batch(conn, "t", [{"i": i, "bad": i == 2} for i in range(5)])
    conn.commit()
    handled: list[int] = []
    with conn.transaction():
        batch = streams.read_next(conn, "g")
        for e in batch.events:
            if e.payload["bad"]:
                assert streams.retry_event(conn, "g", e.id, error="boom") == "retry"
            else:
                handled.append(e.id)
        assert batch.cursor
        streams.commit(conn, "g", batch.cursor)
    assert handled == [i for i in ids if i != ids[2]]  # the stream went on past the bad one
    # the bad event comes back on the retry path, then goes to the dead letters
    for attempt in (2, 3):
        with conn.transaction():
            again = streams.read_retries(conn, "g")
            assert [r.id for r in again] == [ids[2]]
            assert again[0].attempts == attempt - 1
            assert again[0].last_error == ("boom" if attempt == 2 else "boom 2")
            outcome = streams.retry_event(conn, "g", ids[2], error=f"boom {attempt}")
        assert outcome == ("retry" if attempt < 3 else "dead")
    assert streams.read_retries(conn, "g") == []
    dead = streams.dmq(conn, "g")
    assert [(d["event_id"], d["attempts"], d["last_error"]) for d in dead] == [
        (ids[2], 3, "boom 3")
    ]
    streams.dmq_replay(conn, "g", ids[2])
    back = streams.read_retries(conn, "g")
    assert [r.id for r in back] == [ids[2]] and back[0].attempts == 0
    streams.ack_retry(conn, "g", ids[2])
    conn.commit()
    assert streams.read_retries(conn, "g") == [] and streams.dmq(conn, "g") == []
    with pytest.raises(NotFound):
        streams.ack_retry(conn, "g", ids[2])


def test_retry_backoff_and_lease(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g", start="beginning")
    streams.configure_group(conn, "g", retry_backoff=timedelta(minutes=1))
    eid = streams.publish(conn, "t", {})
    drain(conn, "g")
    streams.retry_event(conn, "g", eid, error="later")
    assert streams.read_retries(conn, "g") == []  # not due for a minute
    row = conn.execute(
        "SELECT count(*) FROM mbus.read_retries('g', 10, '1 minute', now() + interval '61 s')"
    ).fetchone()
    assert row == (1,)
    # the claim is leased: not handed out again until the lease runs out
    row = conn.execute(
        "SELECT count(*) FROM mbus.read_retries('g', 10, '1 minute', now() + interval '62 s')"
    ).fetchone()
    assert row == (0,)
