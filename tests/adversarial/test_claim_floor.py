"""Claims start at the queue's floor: no write may leave a ready message below it.

The floor (mbus.floor_guard) is a lower bound of the vt of every live delivery; the upkeep
(mbus.rotate_queue -> mbus.floor_advance) moves it up and claims scan from it. Each test here
makes a write that gives a message a vt below the floor the upkeep just set, then shows the
message is claimed, in its FIFO place. A message left below the floor would never be claimed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[dict[str, Any]]


@pytest.fixture
def ac(db_dsn: str) -> Iterator[Conn]:
    """An autocommit connection to a fresh database with queues ``a`` and ``b``."""
    with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("SELECT mbus.create_queue('a', 1)")
        conn.execute("SELECT mbus.create_queue('b', 1)")
        yield conn


def floor_of(conn: Conn, queue: str) -> datetime | None:
    row = conn.execute(
        "SELECT to_timestamp(0) + pg_sequence_last_value(format('mbus.%%I', "
        "mbus.generated_name('relation', 'floor', %s))::regclass) * interval '1 microsecond' AS f",
        (queue,),
    ).fetchone()
    assert row is not None
    return row["f"]  # type: ignore[no-any-return]


def advance(conn: Conn, queue: str) -> datetime:
    """Run the upkeep and return the floor it set (it must have moved)."""
    conn.execute("SELECT mbus.rotate_queue(%s)", (queue,))
    f = floor_of(conn, queue)
    assert f is not None
    return f


def post(conn: Conn, queue: str, n: int, **kw: Any) -> str:
    row = conn.execute(
        f"SELECT mbus.post_{queue}(%s, %s, delayed_until => %s) AS iid",  # fixed queue names
        (Jsonb({"n": n}), kw.get("headers"), kw.get("delayed_until")),
    ).fetchone()
    assert row is not None
    return str(row["iid"])


def drain(conn: Conn, queue: str) -> list[int]:
    rows = conn.execute(f"SELECT data FROM mbus.consumen_{queue}_by_default(100)").fetchall()
    return [int(r["data"]["n"]) for r in rows]


def test_the_upkeep_moves_the_floor_to_the_oldest_live_message(ac: Conn) -> None:
    assert floor_of(ac, "a") is None  # a new queue has no floor
    post(ac, "a", 1)
    oldest = ac.execute("SELECT min(vt) AS v FROM mbus.q_a").fetchone()
    assert oldest is not None
    assert advance(ac, "a") == oldest["v"]
    assert drain(ac, "a") == [1]
    now = ac.execute("SELECT clock_timestamp() AS t").fetchone()
    assert now is not None
    assert advance(ac, "a") > now["t"]  # empty: the floor is the upkeep's clock


def test_a_message_posted_with_a_past_delayed_until_is_claimed_first(ac: Conn) -> None:
    post(ac, "a", 1)
    f = advance(ac, "a")
    post(ac, "a", 0, delayed_until=f - timedelta(hours=1))
    f2 = floor_of(ac, "a")
    assert f2 is not None and f2 <= f - timedelta(hours=1)
    assert drain(ac, "a") == [0, 1]


def test_a_transaction_that_posts_after_the_floor_moved_past_its_start(
    ac: Conn, db_dsn: str
) -> None:
    """post_ gives vt = now(), the transaction's start: older than a floor set meanwhile."""
    with psycopg.connect(db_dsn, row_factory=dict_row) as late:
        late.execute("SELECT now()")  # the transaction starts: its now() is fixed
        post(ac, "a", 2)
        f = advance(ac, "a")
        row = late.execute("SELECT now() AS t").fetchone()
        assert row is not None and row["t"] < f
        post(late, "a", 1)
        late.commit()
    assert drain(ac, "a") == [1, 2]


def test_the_floor_waits_for_an_open_posting_transaction(ac: Conn, db_dsn: str) -> None:
    """A transaction that posted and has not committed keeps the floor where it is; its message
    is claimed once it commits."""
    post(ac, "a", 0)
    assert drain(ac, "a") == [0]
    before = advance(ac, "a")
    with psycopg.connect(db_dsn, row_factory=dict_row) as open_tx:
        post(open_tx, "a", 1)
        post(ac, "a", 2)
        assert drain(ac, "a") == [2]  # not 1: uncommitted
        row = ac.execute("SELECT mbus.floor_advance('a') AS moved").fetchone()
        assert row == {"moved": False}
        assert floor_of(ac, "a") == before
        open_tx.commit()
    assert drain(ac, "a") == [1]


def test_a_claim_rolled_back_after_the_floor_moved_is_claimed_again(ac: Conn, db_dsn: str) -> None:
    post(ac, "a", 1)
    post(ac, "a", 2)
    with psycopg.connect(db_dsn, row_factory=dict_row) as claimer:
        got = claimer.execute("SELECT data FROM mbus.consume_a_by_default()").fetchall()
        assert [r["data"]["n"] for r in got] == [1]
        advance(ac, "a")  # sees message 1 still there (its delete is not committed)
        claimer.rollback()
    assert drain(ac, "a") == [1, 2]


def test_a_nack_with_an_old_clock_lowers_the_floor(ac: Conn) -> None:
    post(ac, "a", 1)
    lease = ac.execute("SELECT lease_token FROM mbus.lease_a_by_default(1, '1 hour')").fetchone()
    assert lease is not None
    post(ac, "a", 2)
    f = advance(ac, "a")
    ac.execute(
        "SELECT mbus.nack_a(%s, '0', p_now => %s)", (lease["lease_token"], f - timedelta(days=1))
    )
    assert drain(ac, "a") == [1, 2]


def test_a_released_dependency_below_the_floor_is_claimed(ac: Conn) -> None:
    """A waiting message (vt infinity) becomes ready with vt = its post time, older than the
    floor the upkeep set while it waited."""
    dep = post(ac, "a", 1)
    post(ac, "b", 10, headers=Jsonb({"consume_after": [dep]}))
    lease = ac.execute("SELECT lease_token FROM mbus.lease_a_by_default(1, '1 hour')").fetchone()
    assert lease is not None
    post(ac, "b", 11)
    assert drain(ac, "b") == [11]
    f = advance(ac, "b")
    added = ac.execute("SELECT added FROM mbus.q_b").fetchone()
    assert added is not None and added["added"] < f
    ac.execute("SELECT mbus.ack_a(%s)", (lease["lease_token"],))
    assert drain(ac, "b") == [10]


def test_a_replay_in_a_transaction_older_than_the_floor_is_claimed(ac: Conn, db_dsn: str) -> None:
    post(ac, "a", 1)
    lease = ac.execute("SELECT lease_token FROM mbus.lease_a_by_default(1, '1 hour')").fetchone()
    assert lease is not None
    dead = ac.execute("SELECT mbus.bury('a', %s, 'bad') AS d", (lease["lease_token"],)).fetchone()
    assert dead is not None
    with psycopg.connect(db_dsn, row_factory=dict_row) as late:
        late.execute("SELECT now()")
        post(ac, "a", 2)
        advance(ac, "a")
        late.execute("SELECT mbus.dmq_replay(%s)", (dead["d"],))
        late.commit()
    assert drain(ac, "a") == [1, 2]


def test_concurrent_posts_with_old_clocks_and_upkeeps_lose_nothing(ac: Conn, db_dsn: str) -> None:
    """Posters with past delayed_until race the upkeep; every message is claimed once."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def upkeep() -> None:
        try:
            with psycopg.connect(db_dsn, autocommit=True) as c:
                while not stop.is_set():
                    c.execute("SELECT mbus.rotate_queue('a')")
        except BaseException as e:  # reported below
            errors.append(e)

    def poster(k: int) -> None:
        try:
            with psycopg.connect(db_dsn, autocommit=True) as c:
                for i in range(100):
                    c.execute(
                        "SELECT mbus.post_a(%s, delayed_until => clock_timestamp() - %s::interval)",
                        (Jsonb({"n": k * 1000 + i}), f"{i % 7} seconds"),
                    )
        except BaseException as e:  # reported below
            errors.append(e)

    up = threading.Thread(target=upkeep)
    posters = [threading.Thread(target=poster, args=(k,)) for k in range(3)]
    up.start()
    for t in posters:
        t.start()
    got: list[int] = []
    for t in posters:
        t.join()
    got += drain(ac, "a")
    stop.set()
    up.join()
    assert not errors
    while batch := drain(ac, "a"):
        got += batch
    assert sorted(got) == sorted(k * 1000 + i for k in range(3) for i in range(100))


def test_an_upkeep_between_an_insert_and_its_guard_is_undone(ac: Conn, db_dsn: str) -> None:
    """The insert guard runs after its statement's rows are in the table: an upkeep that runs in
    between does not see them and sets the floor above them; the guard, under the floor lock,
    reads that floor and lowers it, so the rows are claimed once committed."""
    post(ac, "a", 2)
    assert drain(ac, "a") == [2]
    old = advance(ac, "a") - timedelta(hours=1)
    ac.execute("SELECT pg_advisory_lock(42)")
    errors: list[BaseException] = []

    def insert() -> None:
        # the second row's expression waits on lock 42: the first row is in the table, the
        # statement (and its AFTER trigger) not yet done
        try:
            with psycopg.connect(db_dsn, autocommit=True) as w:
                w.execute(
                    "INSERT INTO mbus.q_a (c, vt, id, added, data) "
                    "SELECT 1, %s, nextval('mbus.msg_id_seq'), now(), jsonb_build_object('n', g) "
                    "FROM generate_series(0, 1) AS g "
                    "WHERE g = 0 OR pg_advisory_lock_shared(42) IS NOT NULL",
                    (old,),
                )
        except BaseException as e:  # reported by the test
            errors.append(e)

    t = threading.Thread(target=insert)
    t.start()
    try:
        wait_for_lock_wait(ac)
        row = ac.execute("SELECT mbus.floor_advance('a') AS moved").fetchone()
        assert row == {"moved": True}  # no writer holds the floor lock yet
        above = floor_of(ac, "a")
        assert above is not None and above > old
    finally:
        ac.execute("SELECT pg_advisory_unlock(42)")
        t.join(30)
    assert not errors and not t.is_alive()
    f = floor_of(ac, "a")
    assert f is not None and f <= old
    assert drain(ac, "a") == [0, 1]


def wait_for_lock_wait(conn: Conn) -> None:
    """Until another session waits for advisory lock 42."""
    for _ in range(3000):
        row = conn.execute(
            "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = 42 "
            "AND NOT granted"
        ).fetchone()
        if row is not None and row["n"] > 0:
            return
        conn.execute("SELECT pg_sleep(0.01)")
    raise AssertionError("the insert never reached its second row")
