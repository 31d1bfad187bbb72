"""End-to-end latency of stream reads: pgbench publishes at a fixed rate, one reader follows.

Each side gets a fresh database on a private server (``bench/sql/server.py``). pgbench publishes
one event per transaction at ``--rate`` events/s (2 clients, ``-R``, the publish1 scripts of the
``sql_streams`` scenario) for ``--seconds``; one reader in this process reads as the product
does, and records, for every event, the time from its publication (``published_at``, PgQ's
``ev_time``) to the moment the reader had it. The first second is warm-up and not counted.

Sides:

* ``pgmbus``: a ``StreamWorker`` (read_next + commit per batch, ``mbus.await_events`` and
  LISTEN when idle, ``idle_wait`` 1 s).
* ``pgq``: PgQ as deployed with its defaults: ``pgqd``'s ticker calls ``pgq.ticker()`` every
  second (``ticker_period``), the queue ticks after 500 events or 3 s (``ticker_max_count``,
  ``ticker_max_lag``), the consumer polls ``next_batch`` every second when there is no batch
  (skytools' ``loop_delay``).
* ``pgq-fast``: the same with a tick at every ticker call that finds events, the ticker every
  0.1 s and the consumer polling every 0.1 s: PgQ tuned for latency.

Run: ``python -m bench.sql.latency --rate 1000 --seconds 10`` (wrap in ``flock``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

from bench.sql import engines
from bench.sql.model import PAYLOAD, Options, queries
from bench.sql.runner import loadavg
from bench.sql.server import BenchServer
from pgmbus import streams

SCRIPTS = Path(__file__).with_name("scripts")
WARMUP = 1.0
Q = queries("latency.sql")


def _publish(server: BenchServer, db: str, script: str, rate: int, seconds: float) -> None:
    argv = [str(server.bindir / "pgbench"), "-n", "-M", "prepared", "-c", "2", "-j", "2"]
    argv += ["-R", str(rate), "-T", str(round(seconds)), "-D", f"payload={PAYLOAD}"]
    argv += ["-f", str(SCRIPTS / script), *server.libpq_args(db)]
    subprocess.run(argv, check=True, capture_output=True)


def _mbus_reader(dsn: str, until: Callable[[], bool], seen: list[float]) -> None:
    def handler(_conn: psycopg.Connection[Any], event: streams.Event) -> None:
        seen.append(time.time() - event.published_at.timestamp())

    worker = streams.StreamWorker(dsn, "lat", handler, maintain_every=timedelta(hours=1))
    worker.run(stop=until, idle_wait=1.0)


def _pgq_reader(dsn: str, until: Callable[[], bool], seen: list[float], delay: float) -> None:
    with psycopg.connect(dsn) as conn:
        while not until():
            row = conn.execute(Q["pgq_next_batch"]).fetchone()
            batch = row[0] if row else None
            if batch is None:
                conn.commit()
                time.sleep(delay)
                continue
            rows = conn.execute(Q["pgq_events"], {"batch": batch}).fetchall()
            now = time.time()
            seen.extend(now - float(r[0]) for r in rows)
            conn.execute(Q["pgq_finish"], {"batch": batch})
            conn.commit()


def _pgq_ticker(dsn: str, until: Callable[[], bool], period: float) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not until():
            conn.execute(Q["pgq_ticker"])
            time.sleep(period)


def run_side(server: BenchServer, side: str, rate: int, seconds: float) -> dict[str, Any]:
    """Publish at ``rate`` for ``seconds`` while one reader follows; the latency figures."""
    engine = "mbus" if side == "pgmbus" else "pgq"
    dsn = server.create_database(f"lat_{side.replace('-', '_')}")
    engines.install(engine, dsn, server, Options())
    with psycopg.connect(dsn, autocommit=True) as conn:
        if engine == "mbus":
            conn.execute(Q["mbus_group"])
        else:
            conn.execute(Q["pgq_queue"])
            if side == "pgq-fast":
                conn.execute(Q["pgq_fast"])
    seen: list[float] = []
    done = threading.Event()
    threads: list[threading.Thread] = []
    if engine == "mbus":
        threads.append(threading.Thread(target=_mbus_reader, args=(dsn, done.is_set, seen)))
        script = "publish1_pgmbus.sql"
    else:
        period = 1.0 if side == "pgq" else 0.1
        threads.append(threading.Thread(target=_pgq_reader, args=(dsn, done.is_set, seen, period)))
        threads.append(threading.Thread(target=_pgq_ticker, args=(dsn, done.is_set, period)))
        script = "publish1_pgq.sql"
    for t in threads:
        t.start()
    time.sleep(0.5)
    started = len(seen)
    try:
        _publish(server, dsn.rsplit("dbname=", 1)[-1].split()[0], script, rate, seconds)
        deadline = time.monotonic() + 5.0  # let the reader catch up (PgQ: the next ticks)
        total = rate * seconds
        while len(seen) - started < total * 0.98 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        done.set()
        for t in threads:
            t.join(15)
    lat = sorted(seen[started + int(rate * WARMUP) :])
    server.drop_database(f"lat_{side.replace('-', '_')}")
    if not lat:
        return {"side": side, "events": 0}
    return {
        "side": side,
        "events": len(seen) - started,
        "p50_ms": round(1000 * statistics.median(lat), 2),
        "p90_ms": round(1000 * lat[int(0.90 * (len(lat) - 1))], 2),
        "p99_ms": round(1000 * lat[int(0.99 * (len(lat) - 1))], 2),
        "max_ms": round(1000 * lat[-1], 2),
        "mean_ms": round(1000 * statistics.fmean(lat), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sql.latency", description=__doc__)
    parser.add_argument("--rate", default="1000", help="events/s published (comma-separated)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--sides", default="pgmbus,pgq,pgq-fast")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: list[dict[str, Any]] = []
    with BenchServer() as server:
        print("load", loadavg())
        for rate in (int(r) for r in args.rate.split(",")):
            for side in args.sides.split(","):
                res = {"rate": rate, **run_side(server, side, rate, args.seconds)}
                print(json.dumps(res), flush=True)
                results.append(res)
        print("load", loadavg())
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
