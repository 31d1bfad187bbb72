"""Latency of events while another transaction stays open (the long-transaction stall test).

A producer publishes ``size`` events, one per transaction, evenly over ``hold`` seconds, and a
reader drains a group with ``read_next`` + ``commit``, recording each event's latency
(received - published). The candidate runs with one more transaction that publishes an event
and stays open for the whole hold; the baseline without it. Rates are 1 / mean latency, so the
ratio is baseline latency / candidate latency (1.0: the open transaction costs nothing).
The extra ``xmin_watermark_mean_ms`` is what a reader that only trusts transactions below the
snapshot's xmin would have seen in the same run: nothing until the long transaction ended.

``hold`` is 5 s by default (``PGMBUS_BENCH_LONG_TX_HOLD=30`` for the issue's 30 s).
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from datetime import UTC, datetime

import psycopg

from bench.harness import Measurement
from pgmbus import streams

name = "stream_long_tx"
unit = "1/latency"
goal = "with a transaction held open, other events' latency stays at its baseline: ~1.0x"
default_size = 200


def _hold() -> float:
    return float(os.environ.get("PGMBUS_BENCH_LONG_TX_HOLD", "5"))


def setup(dsn: str, size: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        streams.create_group(conn, "latency")


def _producer(dsn: str, size: int, hold: float, tag: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        start = time.monotonic()
        for i in range(size):
            delay = start + i * hold / size - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            streams.publish(conn, "lat", {"tag": tag, "i": i})


def _long(dsn: str, hold: float, opened: threading.Event, ended: list[datetime]) -> None:
    with psycopg.connect(dsn) as conn:
        streams.publish(conn, "lat", {"tag": "long"})
        opened.set()
        time.sleep(hold)
        conn.commit()
        ended.append(datetime.now(UTC))


def _run(dsn: str, size: int, *, with_long: bool) -> Measurement:
    hold = _hold()
    tag = f"r{time.monotonic_ns()}"
    ended: list[datetime] = []
    opened = threading.Event()
    threads = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        streams.seek(conn, "latency", "now")
    if with_long:
        threads.append(threading.Thread(target=_long, args=(dsn, hold, opened, ended)))
        threads[-1].start()
        opened.wait()
    threads.append(threading.Thread(target=_producer, args=(dsn, size, hold, tag)))
    threads[-1].start()
    latencies: list[float] = []
    published: list[datetime] = []
    long_seen = not with_long
    with psycopg.connect(dsn) as conn:
        deadline = time.monotonic() + hold * 3 + 30
        while (len(latencies) < size or not long_seen) and time.monotonic() < deadline:
            batch = streams.read_next(conn, "latency")
            now = datetime.now(UTC)
            if batch.cursor:
                streams.commit(conn, "latency", batch.cursor)
            conn.commit()
            for e in batch.events:
                if e.payload.get("tag") == tag:
                    latencies.append((now - e.published_at).total_seconds())
                    published.append(e.published_at)
                elif e.payload.get("tag") == "long":
                    long_seen = True
            if not batch:
                time.sleep(0.002)
    for t in threads:
        t.join()
    assert len(latencies) == size and long_seen, (len(latencies), long_seen)
    lat = sorted(latencies)
    extra = {
        "p50_ms": 1000 * statistics.median(lat),
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))],
        "hold_s": hold,
    }
    if ended:
        stall = [
            max((ended[0] - p).total_seconds(), lat_)
            for p, lat_ in zip(published, latencies, strict=True)
        ]
        extra["xmin_watermark_mean_ms"] = 1000 * statistics.mean(stall)
    return Measurement(size, sum(latencies), extra)


def candidate(dsn: str, size: int) -> Measurement:
    return _run(dsn, size, with_long=True)


def baseline(dsn: str, size: int) -> Measurement:
    return _run(dsn, size, with_long=False)
