"""Post-commit to consumer-receipt latency at a steady 500 messages/s.

Candidate: a ``Bus.consume(wait=...)`` loop that sleeps on LISTEN and is woken by the post's
NOTIFY (the poll interval is 1 s, so a wake-up that failed would show as ~1 s latency).
Baseline: a raw table polled every 100 ms (what polling queues do). ``extra`` carries p50/p99
in milliseconds; the rate is the delivered messages/s (both keep up, so the ratio is ~1).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from bench.harness import Measurement
from bench.scenarios._queues import RAW_CLAIM, RAW_INSERT, fresh_queue, percentile
from pgmbus.queues import Bus

name = "queue_latency"
unit = "messages"
goal = "p99 post-commit to receipt < 20 ms at 500 msg/s with wake-ups (extra: p50_ms, p99_ms)"
default_size = 1_500
RATE = 500.0
POLL = 0.1


def setup(dsn: str, size: int) -> None:
    fresh_queue(dsn, "lat")


def _run(dsn: str, size: int, post: Any, receive: Any) -> Measurement:
    committed: dict[int, float] = {}
    latencies: list[float] = []
    done = threading.Event()

    def consumer() -> None:
        while len(latencies) < size:
            for n in receive():
                at = time.perf_counter()
                latencies.append(at - committed.get(n, at))
        done.set()

    thread = threading.Thread(target=consumer)
    thread.start()
    time.sleep(0.3)  # the consumer is waiting before the first post
    start = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        for n in range(size):
            due = start + n / RATE
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            post(conn, n)
            committed[n] = time.perf_counter()
    done.wait(120)
    thread.join(5)
    elapsed = time.perf_counter() - start
    return Measurement(
        size,
        elapsed,
        {
            "p50_ms": percentile(latencies, 0.5) * 1000,
            "p99_ms": percentile(latencies, 0.99) * 1000,
            "max_ms": max(latencies) * 1000,
        },
    )


def candidate(dsn: str, size: int) -> Measurement:
    fresh_queue(dsn, "lat")
    with Bus(dsn, poll_interval=1.0) as bus:

        def post(conn: psycopg.Connection[Any], n: int) -> None:
            conn.execute("SELECT mbus.post_lat(%s)", (Jsonb({"n": n}),))

        def receive() -> list[int]:
            return [m.data["n"] for m in bus.consume("lat", limit=50, wait=1.0)]

        return _run(dsn, size, post, receive)


def baseline(dsn: str, size: int) -> Measurement:
    fresh_queue(dsn, "lat")
    with psycopg.connect(dsn, autocommit=True) as poller:

        def post(conn: psycopg.Connection[Any], n: int) -> None:
            conn.execute(RAW_INSERT, (Jsonb({"n": n}),))

        def receive() -> list[int]:
            rows = poller.execute(RAW_CLAIM, (50,)).fetchall()
            if not rows:
                time.sleep(POLL)
            return [r[1]["n"] for r in rows]

        return _run(dsn, size, post, receive)
