"""The Python consumer loop: exactly-once database effects, retries, dead letters, wake-ups."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import psycopg

from pgmbus import streams
from tests.streams.conftest import Connect


def test_worker_handles_retries_and_dead_letters(connect: Connect, db_dsn: str) -> None:
    conn = connect(autocommit=True)
    conn.execute("CREATE TABLE done (event_id bigint PRIMARY KEY)")
    streams.create_group(conn, "w", start="beginning")
    streams.configure_group(conn, "w", max_attempts=2, retry_backoff=timedelta(0))
    ids = streams.publish_batch(conn, "t", [{"i": i} for i in range(20)])
    flaky = {ids[3]: 1}  # fails once, then works

    def handler(c: psycopg.Connection[Any], e: streams.Event) -> None:
        c.execute("INSERT INTO done VALUES (%s)", (e.id,))  # undone when the handler fails
        if e.id == ids[7]:
            raise ValueError("poison")
        if flaky.get(e.id):
            flaky[e.id] -= 1
            raise RuntimeError("transient")

    worker = streams.StreamWorker(db_dsn, "w", handler, batch=6, maintain_every=None)
    with psycopg.connect(db_dsn) as wconn:
        for _ in range(10):
            worker.step(wconn)
    done = [r[0] for r in conn.execute("SELECT event_id FROM done ORDER BY 1")]
    assert done == [i for i in ids if i != ids[7]]
    assert [d["event_id"] for d in streams.dmq(conn, "w")] == [ids[7]]
    assert worker.stats.dead == 1 and worker.stats.retried == 3


def test_worker_wakes_on_publish(connect: Connect, db_dsn: str) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "w")
    got: list[int] = []
    stop = threading.Event()
    worker = streams.StreamWorker(
        db_dsn, "w", lambda _c, e: got.append(e.id), maintain_every=timedelta(hours=1)
    )
    t = threading.Thread(target=worker.run, kwargs={"stop": stop.is_set, "idle_wait": 60.0})
    t.start()
    try:
        deadline = time.monotonic() + 30  # the worker has looked and sleeps, registered
        while conn.execute("SELECT count(*) FROM mbus.stream_waiter").fetchone() != (1,):
            assert time.monotonic() < deadline, "the worker never waited"
            time.sleep(0.02)
        eid = streams.publish(conn, "t", {})
        deadline = time.monotonic() + 20.0  # well under idle_wait: the NOTIFY woke it
        while not got and time.monotonic() < deadline:
            time.sleep(0.02)
        assert got == [eid]
    finally:
        stop.set()
        streams.publish(conn, "t", {})  # wake it so that it sees stop
        t.join(60)
    assert not t.is_alive()
    assert worker.stats.maintained == 1
