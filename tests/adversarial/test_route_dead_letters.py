"""A message a route's destination keeps refusing has a dead place, on every kind of route.

Real databases and the real mover: a destination with a rule of its own (a CHECK constraint)
refuses one message; after a bounded number of attempts that message is buried with the
destination's error as reason, not lost, the route and the other routes go on, and the buried
message can be replayed. Topic routes bury into the dead letters of their group ``xt_<route>``;
``pgmbus bridge --once`` buries as the long-running bridge does.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from pgmbus import streams
from pgmbus.exchange import Bridge
from pgmbus.exchange.bridge import POISON_ATTEMPTS
from pgmbus.queues import Bus

Conn = psycopg.Connection[Any]
NO_THREE = "CHECK (payload->>'n' IS DISTINCT FROM '3')"


def _wait(what: str, check: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _topic(conn: Conn, topic: str = "orders") -> list[int]:
    rows = conn.execute(
        "SELECT (payload->>'n')::int FROM mbus.events WHERE topic = %s ORDER BY id", (topic,)
    ).fetchall()
    return [int(r[0]) for r in rows]


def test_a_topic_event_the_destination_keeps_refusing_goes_to_the_dead_letters_and_back(
    make_db: Callable[..., str],
) -> None:
    src_dsn, bad_dsn, good_dsn = make_db(), make_db(), make_db()
    with (
        psycopg.connect(src_dsn, autocommit=True) as src,
        psycopg.connect(bad_dsn, autocommit=True) as bad,
        psycopg.connect(good_dsn, autocommit=True) as good,
    ):
        bad.execute(f"ALTER TABLE mbus.events ADD CONSTRAINT no_three {NO_THREE}")
        src.execute("SELECT mbus.create_link('bad', %s)", (bad_dsn,))
        src.execute("SELECT mbus.create_link('good', %s)", (good_dsn,))
        src.execute("SELECT mbus.create_topic_route('a_bad', 'bad', 'orders', 'orders')")
        src.execute("SELECT mbus.create_topic_route('b_good', 'good', 'orders', 'orders')")
        for n in range(1, 7):
            streams.publish(src, "orders", {"n": n})
        mover = Bridge(src_dsn, batch=4, poll=0.05)
        stop = threading.Event()
        thread = threading.Thread(target=mover.run, args=(stop,))
        thread.start()
        try:
            _wait("the route stayed stuck", lambda: len(_topic(bad)) == 5)
            assert _topic(bad) == [1, 2, 4, 5, 6]  # in order, the refused one left out
            _wait("the other route was held back", lambda: len(_topic(good)) == 6)
            dead = src.execute(
                "SELECT event_id, payload, attempts, last_error FROM mbus.stream_dead_letters"
                " WHERE group_name = 'xt_a_bad'"
            ).fetchall()
            assert len(dead) == 1, dead
            event_id, payload, attempts, reason = dead[0]
            assert payload == {"n": 3} and attempts == POISON_ATTEMPTS
            assert "route a_bad" in reason and "no_three" in reason
            assert mover.stats.buried == 1
            # the destination takes it now: a replay sends it, once
            bad.execute("ALTER TABLE mbus.events DROP CONSTRAINT no_three")
            src.execute("SELECT mbus.replay_dead_letter('xt_a_bad', %s)", (event_id,))
            _wait("the replayed event never arrived", lambda: len(_topic(bad)) == 6)
            streams.publish(src, "orders", {"n": 7})
            _wait("the route did not go on", lambda: len(_topic(bad)) == 7)
        finally:
            stop.set()
            thread.join(30)
        assert not thread.is_alive()
        assert _topic(bad) == [1, 2, 4, 5, 6, 3, 7]
        assert _topic(good) == [1, 2, 3, 4, 5, 6, 7]
        left = src.execute(
            "SELECT (SELECT count(*) FROM mbus.stream_dead_letters),"
            " (SELECT count(*) FROM mbus.stream_retries)"
        ).fetchone()
        assert left == (0, 0)


def test_bridge_once_buries_what_the_destination_keeps_refusing_and_moves_the_rest(
    make_db: Callable[..., str],
) -> None:
    src_dsn, dst_dsn = make_db(), make_db()
    with (
        psycopg.connect(src_dsn, autocommit=True) as src,
        psycopg.connect(dst_dsn, autocommit=True) as dst,
    ):
        dst.execute("SELECT mbus.create_queue('jobs', 1)")
        dst.execute("ALTER TABLE mbus.q_jobs ADD CONSTRAINT no_three CHECK (data->>'n' <> '3')")
        src.execute("SELECT mbus.create_queue('jobs', 1)")
        src.execute("SELECT mbus.create_link('dst', %s)", (dst_dsn,))
        src.execute("SELECT mbus.create_route('jobs_to_dst', 'dst', 'jobs', 'jobs')")
        src.execute(
            "SELECT mbus.post('jobs', jsonb_build_object('n', n)) FROM generate_series(1, 6) n"
        )
        proc = subprocess.run(
            [sys.executable, "-m", "pgmbus", "bridge", "--dsn", src_dsn, "--once", "--batch", "4"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "moved 5 message(s)" in proc.stdout and "buried 1" in proc.stdout
        rows = dst.execute("SELECT data FROM mbus.consumen('jobs', 'default', 100)").fetchall()
        assert sorted(int(r[0]["n"]) for r in rows) == [1, 2, 4, 5, 6]
        with Bus(src_dsn) as bus:
            [dead] = bus.dmq("jobs")
            assert dead.data == {"n": 3} and dead.cname == "xr_jobs_to_dst"
            assert "route jobs_to_dst" in dead.reason and "no_three" in dead.reason
            assert dead.attempts == POISON_ATTEMPTS
            # not lost: once the destination takes it, a replay and another --once deliver it
            dst.execute("ALTER TABLE mbus.q_jobs DROP CONSTRAINT no_three")
            bus.dmq_replay(dead.dmq_id)
        mover = Bridge(src_dsn)  # what --once runs
        try:
            assert mover.drain() == 1
        finally:
            mover.close()
        rows = dst.execute("SELECT data FROM mbus.consumen('jobs', 'default', 100)").fetchall()
        assert [int(r[0]["n"]) for r in rows] == [3]
