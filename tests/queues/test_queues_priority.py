"""Priority per message: claims take higher priorities first, FIFO within one
priority; consume, consumen and lease all honour it; a queue never posted a priority is claimed
as before; a bad priority gets a typed error and changes nothing."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from pgmbus.errors import InvalidArgument
from pgmbus.queues import AsyncBus, Bus
from tests.cli.conftest import error_line, run

Conn = psycopg.Connection[dict[str, Any]]


def post(conn: Conn, n: int, priority: int | None = 0, delayed: str | None = None) -> str:
    row = conn.execute(
        "SELECT mbus.post_jobs(%s, delayed_until => now() + %s::interval, priority => %s) AS iid",
        (Jsonb({"n": n}), delayed, priority),
    ).fetchone()
    assert row is not None
    return str(row["iid"])


def ns(rows: list[dict[str, Any]]) -> list[int]:
    return [int(r["data"]["n"]) for r in rows]


def flagged(conn: Conn) -> bool:
    row = conn.execute("SELECT prioritized FROM mbus.queue_segment WHERE qname = 'jobs'").fetchone()
    assert row is not None
    return bool(row["prioritized"])


def depth(conn: Conn) -> int:
    row = conn.execute("SELECT count(*) AS n FROM mbus.q_jobs").fetchone()
    assert row is not None
    return int(row["n"])


# (n, priority) in posting order, and the claim order they must come out in
POSTS = [(1, 0), (2, 5), (3, 1), (4, 5), (5, 0), (6, 32767), (7, 1)]
ORDER = [6, 2, 4, 3, 7, 1, 5]


def test_consumen_claims_higher_priority_first_fifo_within(qconn: Conn) -> None:
    assert not flagged(qconn)
    for n, p in POSTS:
        post(qconn, n, p)
    assert flagged(qconn)
    rows = qconn.execute("SELECT data FROM mbus.consumen('jobs', 'default', 100)").fetchall()
    assert ns(rows) == ORDER
    assert depth(qconn) == 0


def test_consumen_in_small_batches_spans_the_tiers(qconn: Conn) -> None:
    for n, p in POSTS:
        post(qconn, n, p)
    got: list[int] = []
    for _ in range(4):
        got += ns(qconn.execute("SELECT data FROM mbus.consumen('jobs', 'default', 2)").fetchall())
    assert got == ORDER


def test_consume_one_by_one_honours_priority(qconn: Conn) -> None:
    for n, p in POSTS:
        post(qconn, n, p)
    got = [ns(qconn.execute("SELECT data FROM mbus.consume('jobs')").fetchall()) for _ in ORDER]
    assert got == [[n] for n in ORDER]
    assert qconn.execute("SELECT data FROM mbus.consume('jobs')").fetchall() == []


def test_lease_returns_its_batch_in_priority_order(qconn: Conn) -> None:
    for n, p in POSTS:
        post(qconn, n, p)
    first = qconn.execute(
        "SELECT data, lease_token FROM mbus.consume_lease('jobs', 'default', 3, '1 minute')"
    ).fetchall()
    assert ns(first) == ORDER[:3]
    rest = qconn.execute(
        "SELECT data, lease_token FROM mbus.consume_lease('jobs', 'default', 10, '1 minute')"
    ).fetchall()
    assert ns(rest) == ORDER[3:]
    # a nacked high-priority message comes back before the lower ones still pending
    for r in first:
        qconn.execute("SELECT mbus.ack('jobs', %s)", (r["lease_token"],))
    qconn.execute("SELECT mbus.nack('jobs', %s)", (rest[0]["lease_token"],))
    post(qconn, 8, 0)
    again = qconn.execute(
        "SELECT data FROM mbus.consume_lease('jobs', 'default', 10, '1 minute')"
    ).fetchall()
    assert ns(again) == [ORDER[3], 8]


def test_delayed_high_priority_waits_until_due(qconn: Conn) -> None:
    post(qconn, 1, 0)
    post(qconn, 2, 9, delayed="1 hour")
    post(qconn, 3, 9, delayed="2 minutes")  # parked in segment 0
    assert ns(
        qconn.execute("SELECT data FROM mbus.consumen('jobs', 'default', 10)").fetchall()
    ) == [1]
    later = qconn.execute(
        "SELECT data FROM mbus.consumen_jobs_by_default(10, now() + interval '90 minutes')"
    ).fetchall()
    assert ns(later) == [3, 2]


def test_queue_without_priorities_is_fifo_and_unflagged(qconn: Conn) -> None:
    for n in range(1, 6):
        post(qconn, n, 0 if n % 2 else None)  # None is priority 0
    assert not flagged(qconn)
    assert ns(qconn.execute("SELECT data FROM mbus.consumen('jobs', 'default', 3)").fetchall()) == [
        1,
        2,
        3,
    ]
    assert ns(qconn.execute("SELECT data FROM mbus.consume('jobs')").fetchall()) == [4]


@pytest.mark.parametrize("bad", [-1, 32768, -32768])
def test_bad_priority_is_refused_and_nothing_stored(qconn: Conn, bad: int) -> None:
    for call in (
        "SELECT mbus.post_jobs('{\"n\": 1}', priority => %s)",
        "SELECT mbus.post('jobs', '{\"n\": 1}', priority => %s)",
    ):
        with pytest.raises(psycopg.Error) as info, qconn.transaction():
            qconn.execute(call, (bad,))
        assert info.value.sqlstate == "MB006"
        assert "priority" in str(info.value)
    assert depth(qconn) == 0
    assert not flagged(qconn)


def test_generic_post_passes_priority(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.post('jobs', '{\"n\": 1}')")
    qconn.execute("SELECT mbus.post('jobs', '{\"n\": 2}', priority => 3)")
    rows = qconn.execute("SELECT data FROM mbus.consumen('jobs', 'default', 10)").fetchall()
    assert ns(rows) == [2, 1]


def test_every_consumer_gets_the_priority(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.create_consumer('jobs', 'other')")
    post(qconn, 1, 0)
    post(qconn, 2, 7)
    for c in ("default", "other"):
        rows = qconn.execute("SELECT data FROM mbus.consumen('jobs', %s, 10)", (c,)).fetchall()
        assert ns(rows) == [2, 1]


def test_two_consumers_never_get_the_same_message(autodb: str) -> None:
    total = 300
    with psycopg.connect(autodb, autocommit=True, row_factory=dict_row) as conn:
        for n in range(total):
            post(conn, n, n % 4)
    got: list[list[int]] = [[], []]
    start = threading.Barrier(2)

    def worker(i: int) -> None:
        with psycopg.connect(autodb, autocommit=True, row_factory=dict_row) as c:
            start.wait()
            while True:
                with c.transaction():
                    rows = c.execute(
                        "SELECT data FROM mbus.consumen('jobs', 'default', 7)"
                    ).fetchall()
                if not rows:
                    return
                got[i] += ns(rows)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    everything = got[0] + got[1]
    assert sorted(everything) == list(range(total))  # none lost, none twice
    for part in got:  # each consumer saw non-increasing priorities
        prios = [n % 4 for n in part]
        assert prios == sorted(prios, reverse=True)


def test_a_locked_top_message_is_skipped_not_waited_for(autodb: str) -> None:
    with psycopg.connect(autodb, autocommit=True, row_factory=dict_row) as conn:
        post(conn, 1, 0)
        post(conn, 2, 9)
        post(conn, 3, 5)
        with psycopg.connect(autodb, row_factory=dict_row) as holder:
            held = holder.execute("SELECT data FROM mbus.consume('jobs')").fetchall()
            assert ns(held) == [2]
            assert ns(
                conn.execute("SELECT data FROM mbus.consumen('jobs', 'default', 5)").fetchall()
            ) == [
                3,
                1,
            ]
            holder.rollback()
        assert ns(conn.execute("SELECT data FROM mbus.consume('jobs')").fetchall()) == [2]


# --- Python and CLI ----------------------------------------------------------------------------


def test_bus_post_priority_and_bad_priority(autodb: str) -> None:
    with Bus(autodb) as bus:
        bus.post("jobs", {"n": 1})
        bus.post("jobs", {"n": 2}, priority=2)
        bus.post("jobs", {"n": 3}, priority=2)
        with pytest.raises(InvalidArgument):
            bus.post("jobs", {"n": 4}, priority=-1)
        assert [m.data["n"] for m in bus.consume("jobs", limit=10)] == [2, 3, 1]

    async def scenario() -> list[int]:
        async with AsyncBus(autodb) as b:
            await b.post("jobs", {"n": 5})
            await b.post("jobs", {"n": 6}, priority=1)
            return [m.data["n"] for m in await b.consume("jobs", limit=10)]

    assert asyncio.run(scenario()) == [6, 5]


def test_cli_post_priority(autodb: str) -> None:
    assert run("queue", "post", "jobs", '{"n": 1}', "--dsn", autodb).exit_code == 0
    assert (
        run("queue", "post", "jobs", '{"n": 2}', "--priority", "9", "--dsn", autodb).exit_code == 0
    )
    bad = run("queue", "post", "jobs", '{"n": 3}', "--priority", "-2", "--dsn", autodb)
    assert bad.exit_code != 0 and "priority" in error_line(bad)
    with psycopg.connect(autodb) as conn:
        rows = conn.execute("SELECT data FROM mbus.consumen('jobs', 'default', 10)").fetchall()
    assert [r[0]["n"] for r in rows] == [2, 1]
