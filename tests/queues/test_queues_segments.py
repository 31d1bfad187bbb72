"""Segmented delivery tables: drained segments are truncated, never waited for, nothing lost."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from typer.testing import CliRunner

from pgmbus.cli import app
from pgmbus.queues import Bus

Conn = psycopg.Connection[dict[str, Any]]


@pytest.fixture
def ac(autodb: str) -> Any:
    """Autocommit dict-row connection; queue ``jobs`` rotates once its segment has 16 kB, and
    only when a test calls rotate_queue (the claims' own upkeep is off: upkeep_every NULL)."""
    with psycopg.connect(autodb, autocommit=True, row_factory=dict_row) as connection:
        connection.execute(
            "UPDATE mbus.queue_segment SET rotate_bytes = 16384, upkeep_every = NULL"
        )
        yield connection


def rotate(conn: Conn, tries: int = 100) -> dict[str, Any]:
    row = conn.execute("SELECT mbus.rotate_queue('jobs', %s) AS r", (tries,)).fetchone()
    assert row is not None
    return dict(row["r"])


def post_many(conn: Conn, n: int, start: int = 0) -> None:
    conn.execute(
        "SELECT count(*) FROM mbus.postn_jobs(%s)",
        ([Jsonb({"n": start + i, "pad": "x" * 100}) for i in range(n)],),
    )


def segment_bytes(conn: Conn, n: int) -> int:
    row = conn.execute("SELECT pg_relation_size(%s) AS b", (f'mbus."q_jobs${n}"',)).fetchone()
    assert row is not None
    return int(row["b"])


def segment_counts(conn: Conn) -> dict[int, int]:
    rows = conn.execute("SELECT seg, count(*) AS n FROM mbus.q_jobs GROUP BY seg").fetchall()
    return {r["seg"]: r["n"] for r in rows}


def drain(conn: Conn) -> list[int]:
    rows = conn.execute("SELECT data FROM mbus.consumen_jobs_by_default(100000)").fetchall()
    return [r["data"]["n"] for r in rows]


def test_posts_go_to_the_current_segment_and_long_waits_to_parking(ac: Conn) -> None:
    """Deliveries go to the current rotating segment; those that will wait long (a delay over
    a minute, consume_after dependencies) go to the parking segment 0, which is never
    truncated, so they cannot keep a rotating segment alive."""
    post_many(ac, 3)
    ac.execute("SELECT mbus.post_jobs('{}', delayed_until => now() + interval '5 seconds')")
    ac.execute("SELECT mbus.post_jobs('{}', delayed_until => now() + interval '1 hour')")
    ac.execute(
        "SELECT count(*) FROM mbus.postn_jobs(ARRAY['{}']::jsonb[], "
        "delayed_until => now() + interval '2 hours')"
    )
    dep = ac.execute("SELECT mbus.post_jobs('{\"dep\": 1}') AS i").fetchone()
    assert dep is not None
    ac.execute(
        "SELECT mbus.post_jobs('{}', jsonb_build_object('consume_after', %s::text))",
        (dep["i"],),
    )
    assert segment_counts(ac) == {1: 5, 0: 3}
    assert ac.execute("SELECT * FROM mbus.waiting").fetchall()


def test_drained_segment_is_truncated_and_reused(ac: Conn) -> None:
    """Once the current segment passed rotate_bytes, rotate_queue starts the next one; once the
    old one is drained it is truncated (its heap and indexes give their space back without
    VACUUM) and becomes available again: the queue cycles through its segments."""
    post_many(ac, 200)
    assert segment_bytes(ac, 1) >= 16384
    report = rotate(ac)
    assert report["rotated"] and report["current"] == 2 and report["truncated"] == []
    post_many(ac, 10, start=200)
    assert segment_counts(ac) == {1: 200, 2: 10}
    assert rotate(ac)["kept"] == [1]  # rows left: not truncated
    assert sorted(drain(ac)) == list(range(210))
    report = rotate(ac)
    assert report["truncated"] == [1] and report["busy"] == []
    assert segment_bytes(ac, 1) == 0
    row = ac.execute(
        "SELECT pg_indexes_size('mbus.\"q_jobs$1\"') AS i, truncations, rotations "
        "FROM mbus.queue_segment WHERE qname = 'jobs'"
    ).fetchone()
    assert row is not None
    assert (row["truncations"], row["rotations"]) == (1, 1)
    assert row["i"] <= 6 * 8192  # each of the 6 indexes back to its metapage
    post_many(ac, 200, start=210)
    assert rotate(ac)["current"] == 3  # the next empty one after 2
    post_many(ac, 200, start=410)
    assert rotate(ac)["current"] == 1  # 2 still holds rows; 1 was truncated
    assert sorted(drain(ac)) == list(range(210, 610))


def test_a_concurrent_transaction_makes_truncation_skip_not_wait(ac: Conn, autodb: str) -> None:
    """A transaction that touched the segment (here a reader of the queue) holds a lock that
    conflicts with TRUNCATE: rotate_queue skips the segment at once (NOWAIT) instead of
    waiting in the lock queue, where it would block every consumer behind it. A statement
    timeout guards the call: a wait would fail the test instead of hanging."""
    post_many(ac, 200)
    rotate(ac)
    drain(ac)
    with psycopg.connect(autodb) as reader:
        reader.execute("SELECT count(*) FROM mbus.q_jobs").fetchone()  # locks every segment
        ac.execute("SET statement_timeout = '20s'")
        report = rotate(ac, tries=3)
        assert report["busy"] == [1] and report["truncated"] == []
        assert segment_bytes(ac, 1) > 0
        # meanwhile consumers and posts are not held up by the skipped truncation
        post_many(ac, 5, start=200)
        assert sorted(drain(ac)) == list(range(200, 205))
    report = rotate(ac)
    assert report["truncated"] == [1]


def test_overlapping_consumer_transactions_do_not_keep_a_drained_segment(
    ac: Conn, autodb: str
) -> None:
    """Transactional consumers whose transactions overlap leave no moment without a lock on
    the segments their claims read. A drained segment that stays busy is closed: claims made
    after that run a plan that does not name it (the seg condition prunes it at plan time), so
    once the transactions that claimed before end, it is truncated although a consumer's
    transaction is open the whole time."""
    post_many(ac, 200)
    assert rotate(ac)["current"] == 2
    assert len(drain(ac)) == 200
    post_many(ac, 4, start=200)
    with psycopg.connect(autodb) as first, psycopg.connect(autodb) as second:
        assert len(first.execute("SELECT * FROM mbus.consumen_jobs_by_default(1)").fetchall())
        report = rotate(ac, tries=2)
        assert report["busy"] == [1] and report["closing"] == 1
        assert len(second.execute("SELECT * FROM mbus.consumen_jobs_by_default(1)").fetchall())
        locked = second.execute(
            "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() "
            "AND relation = 'mbus.\"q_jobs$1\"'::regclass"
        ).fetchone()
        assert locked == (0,)  # the second claim did not touch the closing segment
        first.commit()
        report = rotate(ac, tries=2)  # the second transaction is still open
        assert report["truncated"] == [1] and report["closing"] is None
        second.commit()
    assert len(drain(ac)) == 2


def test_a_late_post_into_a_closing_segment_is_not_lost(ac: Conn, autodb: str) -> None:
    """A post that read the current segment before a rotation and commits into a segment being
    closed is invisible to claims for a moment (they skip that segment), until the next
    rotate_queue sees the row, reopens the segment and the message is consumed."""
    with psycopg.connect(autodb) as poster:
        poster.execute("SELECT mbus.post_jobs(%s)", (Jsonb({"n": -1}),))
        post_many(ac, 200)
        assert rotate(ac)["current"] == 2
        assert len(drain(ac)) == 200
        assert rotate(ac, tries=2)["closing"] == 1
        poster.commit()
    assert drain(ac) == []  # committed into the closing segment, skipped for now
    report = rotate(ac)
    assert report["kept"] == [1] and report["closing"] is None
    assert drain(ac) == [-1]
    assert rotate(ac)["truncated"] == [1]


def test_an_uncommitted_post_keeps_its_segment(ac: Conn, autodb: str) -> None:
    """A post that read the current segment before a rotation and commits after it lands in the
    old segment: the segment is not truncated under it (its open transaction holds a lock),
    and once committed the row is live and keeps the segment until consumed."""
    with psycopg.connect(autodb) as poster:
        poster.execute("SELECT mbus.post_jobs(%s)", (Jsonb({"n": -1}),))
        post_many(ac, 200)
        assert rotate(ac)["current"] == 2
        assert drain(ac) == list(range(200))  # the uncommitted post is invisible
        assert rotate(ac, tries=3)["busy"] == [1]
        poster.commit()
    report = rotate(ac)
    assert report["kept"] == [1] and report["truncated"] == []
    assert drain(ac) == [-1]
    assert rotate(ac)["truncated"] == [1]


def test_a_segment_held_by_a_lease_is_passed_over(ac: Conn) -> None:
    """A delivery that stays long in a rotating segment (here an unfinished lease) keeps only
    that segment; rotation proceeds through the other two, and the leased message can still
    be acked."""
    post_many(ac, 1)
    leased = ac.execute("SELECT * FROM mbus.lease_jobs_by_default(1, '1 hour')").fetchone()
    assert leased is not None
    post_many(ac, 200, start=1)
    assert rotate(ac)["current"] == 2
    drain(ac)
    currents = []
    for k in range(4):
        post_many(ac, 200, start=1000 * (k + 1))
        report = rotate(ac)
        currents.append(report["current"])
        assert 1 in report["kept"] or report["current"] != 1
        drain(ac)
    assert 1 not in currents and set(currents) == {2, 3}
    ac.execute("SELECT mbus.ack_jobs(%s)", (leased["lease_token"],))
    assert 1 in rotate(ac)["truncated"]


def test_rotate_refuses_where_its_check_could_be_wrong(autodb: str) -> None:
    """rotate_queue does nothing in a transaction that wrote already (its TRUNCATE lock would
    be held to that transaction's end) or under REPEATABLE READ (its emptiness check could
    miss a row committed after the snapshot)."""
    with psycopg.connect(autodb, row_factory=dict_row) as conn:
        conn.execute("SELECT mbus.post_jobs('{}')")
        assert "skipped" in rotate(conn)
        conn.rollback()
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        assert "skipped" in rotate(conn)
        conn.rollback()
        assert "skipped" not in rotate(conn)


def test_exactly_once_across_rotations(ac: Conn, autodb: str) -> None:
    """ "If a message was received by one process with mbus.consume(qname), another process will
    NOT receive it": 3 producers x 3 consumers (some claims rolled back) while a rotator
    truncates and switches segments as fast as it can; every message is received exactly
    once, and rotations and truncations did happen."""
    producers, per_producer, batch = 3, 1200, 20
    total = producers * per_producer
    got: list[int] = []
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def produce(p: int) -> None:
        try:
            with psycopg.connect(autodb, autocommit=True, row_factory=dict_row) as conn:
                for i in range(0, per_producer, batch):
                    post_many(conn, batch, start=p * per_producer + i)
        except BaseException as exc:
            errors.append(exc)

    def consume(k: int) -> None:
        try:
            with psycopg.connect(autodb) as conn:
                claims = 0
                while not stop.is_set():
                    rows = conn.execute(
                        "SELECT data FROM mbus.consumen_jobs_by_default(7)"
                    ).fetchall()
                    claims += 1
                    if rows and claims % 5 == k:
                        conn.rollback()  # the messages come back
                        continue
                    conn.commit()
                    with lock:
                        got.extend(r[0]["n"] for r in rows)
                        if len(got) >= total:
                            stop.set()
        except BaseException as exc:
            errors.append(exc)
            stop.set()

    def rotator() -> None:
        try:
            with psycopg.connect(autodb, autocommit=True, row_factory=dict_row) as conn:
                while not stop.is_set():
                    rotate(conn, tries=5)
        except BaseException as exc:
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    threads += [threading.Thread(target=consume, args=(k,)) for k in range(3)]
    threads.append(threading.Thread(target=rotator))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    stop.set()
    assert not errors, errors
    counts = Counter(got)
    assert set(counts) == set(range(total))
    assert max(counts.values()) == 1
    row = ac.execute(
        "SELECT rotations, truncations FROM mbus.queue_segment WHERE qname = 'jobs'"
    ).fetchone()
    assert row is not None and row["rotations"] >= 3 and row["truncations"] >= 2


def test_bus_consumers_keep_the_storage_flat(ac: Conn, autodb: str) -> None:
    """Bus.consume runs the queue's upkeep itself (at most once per rotate_every, on a pooled
    autocommit connection), so a queue consumed through Bus needs no scheduler."""
    with Bus(autodb, rotate_every=0.0) as bus:
        for k in range(3):
            post_many(ac, 200, start=200 * k)
            got = bus.consume("jobs", limit=1000)
            assert len(got) == 200
        bus.consume("jobs")
        assert bus.rotate("jobs")["current"] in (1, 2, 3)
    row = ac.execute(
        "SELECT rotations, truncations FROM mbus.queue_segment WHERE qname = 'jobs'"
    ).fetchone()
    assert row is not None and row["rotations"] >= 2 and row["truncations"] >= 1


def test_cli_rotate(ac: Conn, autodb: str) -> None:
    """`pgmbus queue rotate [NAME]`: one JSON report per run, for every queue by default."""
    post_many(ac, 200)
    runner = CliRunner()
    result = runner.invoke(app, ["queue", "rotate", "jobs", "--dsn", autodb])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["jobs"]["current"] == 2
    drain(ac)
    result = runner.invoke(app, ["queue", "rotate", "--dsn", autodb])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["jobs"]["truncated"] == [1]


def upkeep_state(conn: Conn) -> dict[str, Any]:
    row = conn.execute(
        "SELECT rotations, truncations, upkept_at FROM mbus.queue_segment WHERE qname = 'jobs'"
    ).fetchone()
    assert row is not None
    return dict(row)


def test_sql_only_consumers_keep_the_storage_flat(ac: Conn) -> None:
    """Nobody calls rotate_queue: the claims run it themselves once upkept_at is upkeep_every
    old (here 10 ms), in their own autocommit transaction, so the queue cycles through its
    segments and truncates the drained ones; consume, consumen and lease all do it."""
    ac.execute("UPDATE mbus.queue_segment SET upkeep_every = '10 milliseconds'")
    seen: list[int] = []
    for k in range(4):
        post_many(ac, 200, start=200 * k)
        time.sleep(0.03)
        if k == 1:  # lease + ack, and single consumes, run the upkeep too
            rows = ac.execute(
                "SELECT data, lease_token FROM mbus.lease_jobs_by_default(1000, '1 minute')"
            ).fetchall()
            for r in rows:
                ac.execute("SELECT mbus.ack_jobs(%s)", (r["lease_token"],))
            seen += [r["data"]["n"] for r in rows]
        elif k == 2:
            while got := ac.execute("SELECT data FROM mbus.consume_jobs_by_default()").fetchall():
                seen.append(got[0]["data"]["n"])
        else:
            seen += drain(ac)
    time.sleep(0.03)
    assert drain(ac) == []
    assert sorted(seen) == list(range(800))
    state = upkeep_state(ac)
    assert state["rotations"] >= 3 and state["truncations"] >= 2
    sizes = [segment_bytes(ac, n) for n in (1, 2, 3)]
    assert sum(1 for b in sizes if b == 0) >= 2, sizes  # at most the current one is left


def test_claims_in_a_longer_transaction_leave_the_upkeep_alone(ac: Conn, autodb: str) -> None:
    """A claim that comes later in its transaction does not run the upkeep; one that starts an
    explicit transaction runs it without truncating (a TRUNCATE's lock would be held to that
    transaction's end and stop every other consumer): no ACCESS EXCLUSIVE lock is held."""
    ac.execute("UPDATE mbus.queue_segment SET upkeep_every = '10 milliseconds'")
    post_many(ac, 200)
    time.sleep(0.03)
    before = upkeep_state(ac)
    with psycopg.connect(autodb, row_factory=dict_row) as tx:
        tx.execute("SELECT 1")
        time.sleep(0.03)
        assert len(tx.execute("SELECT * FROM mbus.consumen_jobs_by_default(10)").fetchall()) == 10
        tx.commit()
    assert upkeep_state(ac) == before
    drain(ac)  # autocommit: rotates (segment 1 is big)
    post_many(ac, 5, start=200)
    time.sleep(0.03)
    with psycopg.connect(autodb, row_factory=dict_row) as tx:
        got = tx.execute("SELECT * FROM mbus.consumen_jobs_by_default(%s)", (10,)).fetchall()
        assert len(got) == 5
        locks = ac.execute(
            "SELECT count(*) AS n FROM pg_locks WHERE mode = 'AccessExclusiveLock' "
            "AND relation::regclass::text LIKE 'mbus.\"q_jobs$%%'"
        ).fetchone()
        assert locks is not None and locks["n"] == 0
        tx.commit()
    after = upkeep_state(ac)
    assert after["upkept_at"] > before["upkept_at"] and after["truncations"] == 0
    assert segment_bytes(ac, 1) > 0  # drained, left to autovacuum


def test_extended_protocol_consumers_rotate_through_drained_segments(ac: Conn) -> None:
    """Claims with parameters (extended protocol, as pgbench -M prepared, JDBC, psycopg with
    parameters) cannot be told from a claim that opens a longer transaction: their upkeep
    never truncates, but it rotates, into drained segments once none is empty, so the queue
    keeps cycling (autovacuum makes the drained space reusable)."""
    ac.execute("UPDATE mbus.queue_segment SET upkeep_every = '10 milliseconds'")
    seen: list[int] = []
    for k in range(6):
        post_many(ac, 200, start=200 * k)
        time.sleep(0.03)
        rows = ac.execute(
            "SELECT data FROM mbus.consumen_jobs_by_default(%s)", (100000,), prepare=True
        ).fetchall()
        seen += [r["data"]["n"] for r in rows]
    assert sorted(seen) == list(range(1200))
    state = upkeep_state(ac)
    assert state["rotations"] >= 5 and state["truncations"] == 0
    # a reused segment is rotated away only after rotate_bytes of new growth, not at once
    before = upkeep_state(ac)["rotations"]
    for _ in range(3):
        post_many(ac, 5)
        time.sleep(0.03)
        ac.execute("SELECT data FROM mbus.consumen_jobs_by_default(%s)", (100,), prepare=True)
    assert upkeep_state(ac)["rotations"] == before


def test_claims_under_repeatable_read_do_not_call_the_upkeep(ac: Conn, autodb: str) -> None:
    """rotate_queue refuses to work under REPEATABLE READ (its emptiness check could miss a
    row), so such claims do not call it at all (it would refuse on every claim)."""
    ac.execute("UPDATE mbus.queue_segment SET upkeep_every = '10 milliseconds'")
    post_many(ac, 5)
    time.sleep(0.03)
    claim = "SELECT * FROM mbus.consumen_jobs_by_default(%s)"
    calls = (
        "SELECT coalesce(sum(calls), 0) AS n FROM pg_stat_xact_user_functions "
        "WHERE schemaname = 'mbus' AND funcname = 'rotate_queue'"
    )
    with psycopg.connect(autodb, row_factory=dict_row) as tx:
        tx.execute("SET track_functions = 'pl'")
        tx.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        tx.commit()
        assert len(tx.execute(claim, (10,)).fetchall()) == 5
        row = tx.execute(calls).fetchone()
        assert row is not None and row["n"] == 0
        tx.rollback()
        tx.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED")
        tx.commit()
        assert len(tx.execute(claim, (10,)).fetchall()) == 5  # the same claim, READ COMMITTED
        row = tx.execute(calls).fetchone()
        assert row is not None and row["n"] == 1
        tx.rollback()


def _post_spread_over_segments(conn: Conn) -> tuple[int, int]:
    """Five messages whose claim order alternates between segments: a (vt +30 s) and b (now)
    in the current segment; after a rotation c (+10 s) and d (+50 s) in the next; e parked in
    segment 0 (+2 h). Claimed three hours ahead, the order is b, c, a, d, e. Returns the two
    rotating segments."""

    def post(name: str, delay: str) -> None:
        conn.execute(
            "SELECT mbus.post_jobs(%s, delayed_until => now() + %s::interval)",
            (Jsonb({"n": name, "pad": "x" * 100}), delay),
        )

    post_many(conn, 200, start=1000)  # segment 1 past rotate_bytes
    assert sorted(drain(conn)) == list(range(1000, 1200))
    post("a", "30 seconds")
    post("b", "0 seconds")
    first = segment_counts(conn)
    second = rotate(conn)["current"]
    assert list(first) != [second]
    post("c", "10 seconds")
    post("d", "50 seconds")
    post("e", "2 hours")
    assert segment_counts(conn) == {0: 1, **first, second: 2}
    return next(iter(first)), second


def test_batch_claims_across_segments_return_claim_order(ac: Conn) -> None:
    """A batch whose rows sit in several segments is deleted (consumen) or leased segment by
    segment, and still comes back in claim order, (vt, id), across the segments; a lease whose
    rows reached max_attempts buries them from every segment."""
    later = "now() + interval '3 hours'"
    _post_spread_over_segments(ac)
    rows = ac.execute(f"SELECT data FROM mbus.consumen_jobs_by_default(10, {later})").fetchall()
    assert [r["data"]["n"] for r in rows] == ["b", "c", "a", "d", "e"]
    assert segment_counts(ac) == {}

    first, second = _post_spread_over_segments(ac)
    rows = ac.execute(
        f"SELECT data, lease_token FROM mbus.lease_jobs_by_default(10, '1 minute', NULL, {later})"
    ).fetchall()
    assert [r["data"]["n"] for r in rows] == ["b", "c", "a", "d", "e"]
    assert all(r["lease_token"] is not None for r in rows)
    assert segment_counts(ac) == {0: 1, first: 2, second: 2}  # leased in place
    # a, c, e leased once more (attempts 2); then max_attempts 2 buries them, leases b and d
    ac.execute("UPDATE mbus.q_jobs SET attempts = 2 WHERE data->>'n' IN ('a', 'c', 'e')")
    rows = ac.execute(
        "SELECT data FROM mbus.lease_jobs_by_default(10, '1 minute', 2, now() + interval '4 hours')"
    ).fetchall()
    assert [r["data"]["n"] for r in rows] == ["b", "d"]
    buried = ac.execute(
        "SELECT data->>'n' AS n, reason FROM mbus.dmq WHERE qname = 'jobs' ORDER BY 1"
    ).fetchall()
    # their leases ended unreported (no ack, nack or bury): the reason says so
    never = (
        "max_attempts (2) reached: the last of 2 deliveries never reported "
        "(its lease ended without ack, nack or bury)"
    )
    assert [(b["n"], b["reason"]) for b in buried] == [(n, never) for n in ("a", "c", "e")]
    assert segment_counts(ac) == {first: 1, second: 1}


def test_single_claims_take_from_every_segment(ac: Conn) -> None:
    """consume_ takes one message at a time from whichever segment holds the next due one."""
    later = "now() + interval '3 hours'"
    _post_spread_over_segments(ac)
    counted = "SELECT consumed FROM mbus.queue_counters('jobs') WHERE cname = 'default'"
    before = ac.execute(counted).fetchone()
    got = []
    for _ in range(6):
        rows = ac.execute(f"SELECT data FROM mbus.consume_jobs_by_default({later})").fetchall()
        got += [r["data"]["n"] for r in rows]
    assert got == ["b", "c", "a", "d", "e"]
    after = ac.execute(counted).fetchone()
    assert before is not None and after is not None
    assert after["consumed"] - before["consumed"] == 5  # the sixth call claimed nothing


def test_lease_tokens_name_their_segment_and_older_tokens_still_ack(ac: Conn) -> None:
    """A lease token ends in its segment's number, so ack_ probes that segment alone; a token
    that does not (one issued before this scheme) is still acknowledged, through the parent,
    and a token nobody holds is refused (MB007) whatever its last digit."""
    post_many(ac, 3)
    rows = ac.execute(
        "SELECT lease_token FROM mbus.lease_jobs_by_default(3, '1 minute')"
    ).fetchall()
    tokens = [str(r["lease_token"]) for r in rows]
    segs = ac.execute(
        "SELECT DISTINCT seg FROM mbus.q_jobs WHERE lease_token IS NOT NULL"
    ).fetchall()
    assert [s["seg"] for s in segs] == [1]
    assert all(t.endswith("1") for t in tokens)
    ac.execute("SELECT mbus.ack_jobs(%s::uuid)", (tokens[0],))
    # an older token: another last digit, pointing at a segment that does not hold the row
    for digit, token in zip("2f", tokens[1:], strict=True):
        older = token[:-1] + digit
        ac.execute(
            "UPDATE mbus.q_jobs SET lease_token = %s::uuid WHERE lease_token = %s::uuid",
            (older, token),
        )
        ac.execute("SELECT mbus.ack_jobs(%s::uuid)", (older,))
        with pytest.raises(psycopg.Error) as err:
            ac.execute("SELECT mbus.ack_jobs(%s::uuid)", (older,))
        assert err.value.sqlstate == "MB007"
    assert segment_counts(ac) == {}
    consumed = ac.execute(
        "SELECT consumed FROM mbus.queue_counters('jobs') WHERE cname = 'default'"
    ).fetchone()
    assert consumed is not None and consumed["consumed"] == 3
