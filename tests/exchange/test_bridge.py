"""The mover between databases of one server: routes both ways and in a ring, order, no loops."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pgmbus.exchange import Bridge, RoutesFailed

Conn = psycopg.Connection[tuple[object, ...]]


def _name(conn: Conn) -> str:
    row = conn.execute("SELECT current_database()").fetchone()
    assert row is not None
    return str(row[0])


def _drain_all(conn: Conn, qname: str) -> list[tuple[str, dict[str, object], dict[str, object]]]:
    rows = conn.execute(
        "SELECT iid, headers, data FROM mbus.consumen(%s, 'default', 100000)", (qname,)
    ).fetchall()
    drained = []
    for iid, headers, data in rows:
        assert isinstance(headers, dict) and isinstance(data, dict)  # jsonb objects
        drained.append((str(iid), headers, data))
    return drained


def test_routes_both_ways_move_each_message_once_and_never_loop(
    make_db: Callable[..., str],
) -> None:
    a_dsn, b_dsn = make_db(), make_db()
    with psycopg.connect(a_dsn, autocommit=True) as a, psycopg.connect(b_dsn, autocommit=True) as b:
        a_db, b_db = _name(a), _name(b)
        for conn, peer in ((a, b_dsn), (b, a_dsn)):
            conn.execute("SELECT mbus.create_queue('orders', 1)")
            conn.execute("SELECT mbus.create_link('peer', %s)", (peer,))
            conn.execute("SELECT mbus.create_route('to_peer', 'peer', 'orders', 'orders')")
        for conn, origin in ((a, "a"), (b, "b")):
            conn.execute(
                "SELECT mbus.post('orders', jsonb_build_object('origin', %s::text, 'n', n)) "
                "FROM generate_series(1, 120) AS n",
                (origin,),
            )
        movers = [Bridge(a_dsn, batch=25), Bridge(b_dsn, batch=25)]
        try:
            for _ in range(4):  # back and forth: the copies sent back are refused
                for mover in movers:
                    mover.drain()
        finally:
            for mover in movers:
                mover.close()
        assert movers[0].stats.accepted == 120 and movers[1].stats.accepted == 120
        assert movers[0].stats.looped == 120 and movers[1].stats.looped == 120
        assert movers[0].stats.duplicate == movers[1].stats.duplicate == 0
        for conn, here, there, mine in ((a, a_db, b_db, "a"), (b, b_db, a_db, "b")):
            got = _drain_all(conn, "orders")
            assert len(got) == 240 and len({iid for iid, _, _ in got}) == 240
            own = [(h, d) for _, h, d in got if d["origin"] == mine]
            came = [(h, d) for _, h, d in got if d["origin"] != mine]
            assert all(h["seenby"] == [here] and h["source_db"] == here for h, _ in own)
            assert all(h["seenby"] == [there, here] and h["source_db"] == there for h, _ in came)
            assert [d["n"] for _, d in came] == list(range(1, 121))  # the route kept the order


def test_a_ring_of_three_databases_grows_seenby_one_hop_at_a_time(
    make_db: Callable[..., str],
) -> None:
    dsns = [make_db(), make_db(), make_db()]
    conns = [psycopg.connect(dsn, autocommit=True) for dsn in dsns]
    try:
        names = [_name(c) for c in conns]
        for i, conn in enumerate(conns):
            conn.execute("SELECT mbus.create_queue('ring', 1)")
            conn.execute("SELECT mbus.create_link('next', %s)", (dsns[(i + 1) % 3],))
            conn.execute("SELECT mbus.create_route('onward', 'next', 'ring', 'ring')")
        conns[0].execute(
            "SELECT mbus.post('ring', %s, %s)", (Jsonb({"k": 1}), Jsonb({"trace": "x"}))
        )
        movers = [Bridge(dsn) for dsn in dsns]
        try:
            for _ in range(3):
                for mover in movers:
                    mover.drain()
        finally:
            for mover in movers:
                mover.close()
        seen = [_drain_all(c, "ring") for c in conns]
        assert [len(s) for s in seen] == [1, 1, 1]
        assert len({s[0][0] for s in seen}) == 1  # one iid everywhere
        for hops, s in enumerate(seen, start=1):
            headers = s[0][1]
            assert headers["seenby"] == names[:hops]
            assert headers["source_db"] == names[0] and headers["trace"] == "x"
        assert [m.stats.looped for m in movers] == [0, 0, 1]  # third hop back to the first: refused
    finally:
        for conn in conns:
            conn.close()


def test_pgmbus_bridge_once_from_the_command_line(make_db: Callable[..., str]) -> None:
    a_dsn, b_dsn = make_db(), make_db()
    with psycopg.connect(a_dsn, autocommit=True) as a, psycopg.connect(b_dsn, autocommit=True) as b:
        a.execute("SELECT mbus.create_queue('jobs', 1)")
        b.execute("SELECT mbus.create_queue('jobs', 1)")
        a.execute("SELECT mbus.create_link('b', %s)", (b_dsn,))
        a.execute("SELECT mbus.create_route('jobs_to_b', 'b', 'jobs', 'jobs')")
        a.execute("SELECT mbus.post('jobs', '{\"x\": 1}') FROM generate_series(1, 7)")
        proc = subprocess.run(
            [sys.executable, "-m", "pgmbus", "bridge", "--dsn", a_dsn, "--once", "--batch", "3"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert "moved 7 message(s)" in proc.stdout
        assert len(_drain_all(b, "jobs")) == 7


def test_a_batch_sent_again_after_the_destination_committed_is_skipped(
    make_db: Callable[..., str],
) -> None:
    """The crash window of the protocol, made to happen: destination committed, source not."""
    a_dsn, b_dsn = make_db(), make_db()
    with psycopg.connect(a_dsn) as a, psycopg.connect(b_dsn, autocommit=True) as b:
        a.autocommit = True
        a.execute("SELECT mbus.create_queue('jobs', 1)")
        b.execute("SELECT mbus.create_queue('jobs', 1)")
        a.execute("SELECT mbus.create_link('b', %s)", (b_dsn,))
        a.execute("SELECT mbus.create_route('jobs_to_b', 'b', 'jobs', 'jobs')")
        a.execute(
            "SELECT mbus.post('jobs', jsonb_build_object('n', n)) FROM generate_series(1, 5) n"
        )
        a.autocommit = False
        batch = a.execute("SELECT mbus.exchange_take('jobs_to_b', 3)").fetchone()
        assert batch is not None
        b.execute("SELECT mbus.exchange_receive('jobs', %s)", (Jsonb(batch[0]),))
        a.rollback()  # the mover dies here: the source never learns the batch arrived
        a.autocommit = True
        mover = Bridge(a_dsn, batch=3)
        try:
            assert mover.drain() == 5
        finally:
            mover.close()
        assert (mover.stats.accepted, mover.stats.duplicate) == (2, 3)
        got = _drain_all(b, "jobs")
        assert [d["n"] for _, _, d in got] == [1, 2, 3, 4, 5]


def test_an_idle_mover_wakes_up_on_a_post_long_before_its_poll(
    make_db: Callable[..., str],
) -> None:
    a_dsn, b_dsn = make_db(), make_db()
    with (
        psycopg.connect(a_dsn, autocommit=True) as a,
        psycopg.connect(b_dsn, autocommit=True) as b,
    ):
        a.execute("SELECT mbus.create_queue('jobs', 1)")
        b.execute("SELECT mbus.create_queue('jobs', 1)")
        a.execute("SELECT mbus.create_link('b', %s)", (b_dsn,))
        a.execute("SELECT mbus.create_route('jobs_to_b', 'b', 'jobs', 'jobs')")
        mover = Bridge(a_dsn, poll=30.0)
        stop = threading.Event()
        thread = threading.Thread(target=mover.run, args=(stop,))
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while a.execute("SELECT count(*) FROM mbus.queue_waiter").fetchone() != (1,):
                assert time.monotonic() < deadline, "the mover never waited on the queue"
                time.sleep(0.05)
            posted = time.monotonic()
            a.execute("SELECT mbus.post('jobs', '{\"x\": 1}')")
            while b.execute("SELECT count(*) FROM mbus.q_jobs").fetchone() != (1,):
                assert time.monotonic() - posted < 5, "no wake-up: the 30 s poll would be next"
                time.sleep(0.01)
        finally:
            stop.set()
            thread.join(40)
        assert not thread.is_alive()
        assert mover.stats.accepted == 1


def test_drain_moves_every_route_it_can_then_names_the_failed_ones(
    make_db: Callable[..., str],
) -> None:
    a_dsn, b_dsn = make_db(), make_db()
    with psycopg.connect(a_dsn, autocommit=True) as a, psycopg.connect(b_dsn, autocommit=True) as b:
        a.execute("SELECT mbus.create_queue('jobs', 1)")
        b.execute("SELECT mbus.create_queue('jobs', 1)")
        a.execute("SELECT mbus.create_link('b', %s)", (b_dsn,))
        # sorted first, and its destination queue does not exist (MB002 there)
        a.execute("SELECT mbus.create_route('a_missing', 'b', 'jobs', 'nowhere')")
        a.execute("SELECT mbus.create_route('b_ok', 'b', 'jobs', 'jobs')")
        a.execute("SELECT mbus.post('jobs', '{\"x\": 1}') FROM generate_series(1, 4)")
        mover = Bridge(a_dsn, batch=3)
        try:
            with pytest.raises(RoutesFailed) as failed:
                mover.drain()
        finally:
            mover.close()
        assert failed.value.moved == 4 and list(failed.value.failed) == ["a_missing"]
        assert "nowhere" in failed.value.failed["a_missing"]
        assert "a_missing" in str(failed.value) and "b_ok" not in str(failed.value)
        assert len(_drain_all(b, "jobs")) == 4
        assert mover.stats.errors == 1
