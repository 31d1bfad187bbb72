"""Timer lateness: N callbacks due within the same 10 seconds, called on a local HTTP server.

Candidate: two ``pgmbus dispatcher`` processes (bucket leases, SKIP LOCKED claims, keep-alive
HTTP/1.1 parsed by httptools). Baseline: the original design's shape in raw SQL: one process that
once a second selects the due rows (``FOR UPDATE SKIP LOCKED``), calls them with httpx at the same
concurrency, and marks them notified in the same transaction. The target is a minimal asyncio
HTTP/1.1 server (keep-alive) in a thread of the bench, its CPU measured: it must not be the limit.
The rate is callbacks per second from the first due time to the last call (at most size / 10 s);
lateness (arrival minus run_at) p50/p99/max, the CPU milliseconds per call of the dispatcher
processes, of the PostgreSQL server and of the target server's thread, and the load average are in
the extras, and each side prints them in a line. The default: 50,000 callbacks (5,000 calls/s at
most), 3 rounds (about six minutes).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
from psycopg.types.json import Jsonb

from bench.harness import Measurement
from bench.scenarios._timers_common import (
    CpuMeter,
    TargetServer,
    bench_client,
    lateness_extra,
    reset,
    spawn,
    stop_all,
)

name = "timers_lateness"
unit = "callbacks"
goal = "5,000 calls/s, p99 lateness < 1 s with two dispatchers (extras p99_ms); baseline polls 1/s"
default_size = 50_000
default_rounds = 3
WINDOW_S = 10.0  # the window; tiny smoke-test sizes use 1 s
CONCURRENCY = 64


def _window(size: int) -> float:
    return WINDOW_S if size >= 1000 else 1.0


_client: dict[str, int] = {}


def setup(dsn: str, size: int) -> None:
    _client[dsn] = bench_client(dsn)[0]


def _insert(dsn: str, url: str, size: int) -> float:
    """Insert ``size`` callbacks due evenly over WINDOW_S seconds; return the first due time."""
    # the inserts must be done before the first callback is due, even on a loaded machine
    start = datetime.now(UTC) + timedelta(seconds=2 + size / 2500)
    items = [
        {
            "client_id": _client[dsn],
            "group_key": "bench",
            "event_key": f"e{i}",
            "run_at": (start + timedelta(seconds=_window(size) * i / size)).isoformat(),
            "url": url,
            "retry": {"fast_retries": 0},
        }
        for i in range(size)
    ]
    with psycopg.connect(dsn, autocommit=True) as conn:
        for lo in range(0, size, 2000):
            conn.execute(
                "SELECT count(*) FROM mbus.timer_create_many(%s)", (Jsonb(items[lo : lo + 2000]),)
            )
    return start.timestamp()


def _wait(server: TargetServer, size: int, limit_s: float) -> None:
    deadline = time.time() + limit_s
    while len(server.arrivals) < size and time.time() < deadline:
        time.sleep(0.05)


def _measure(
    server: TargetServer, start: float, inserted: float, meter: CpuMeter, side: str
) -> Measurement:
    last = max((a for a, _ in server.arrivals), default=time.time())
    extra = lateness_extra(server.arrivals)
    extra.update(meter.per_call(len(server.arrivals)))
    extra["insert_margin_s"] = round(start - inserted, 2)
    print(
        f"  {side}: {len(server.arrivals)} calls, lateness p50 {extra['p50_ms']:.0f} ms, "
        f"p99 {extra['p99_ms']:.0f} ms, max {extra['max_ms']:.0f} ms; CPU ms per call: "
        + ", ".join(
            f"{k.removeprefix('cpu_ms_per_call_')} {v:.3f}"
            for k, v in extra.items()
            if k.startswith("cpu_ms_per_call_")
        )
        + f"; load {extra['load1']}; inserts done {extra['insert_margin_s']} s before due",
        file=sys.stderr,
    )
    return Measurement(len(server.arrivals), max(last - start, 1e-6), extra)


def candidate(dsn: str, size: int) -> Measurement:
    reset(dsn)
    server = TargetServer().start()
    procs = [
        spawn(
            "pgmbus",
            "dispatcher",
            "--dsn",
            dsn,
            "--allow-network",
            "127.0.0.1/32",
            "--concurrency",
            str(CONCURRENCY),
            "--timeout",
            "5",
        )
        for _ in range(2)
    ]
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            deadline = time.time() + 30
            while time.time() < deadline:
                owners = conn.execute(
                    "SELECT count(DISTINCT owner), count(owner) FROM mbus.timer_buckets"
                ).fetchone()
                if owners == (2, 64):
                    break
                time.sleep(0.2)
        meter = CpuMeter(dsn, {"dispatchers": [p.pid for p in procs]}, server)
        meter.start()
        start = _insert(dsn, server.url, size)
        meter.restart("postgres")
        inserted = time.time()
        _wait(server, size, _window(size) + 120)
        return _measure(server, start, inserted, meter, "candidate (2 dispatchers)")
    finally:
        stop_all(procs)
        server.stop()


def baseline(dsn: str, size: int) -> Measurement:
    reset(dsn)
    server = TargetServer().start()
    proc = spawn("bench.scenarios.timers_lateness", "--baseline-worker", dsn)
    try:
        time.sleep(1.0)
        meter = CpuMeter(dsn, {"dispatchers": [proc.pid]}, server)
        meter.start()
        start = _insert(dsn, server.url, size)
        meter.restart("postgres")
        inserted = time.time()
        _wait(server, size, _window(size) + 120)
        return _measure(server, start, inserted, meter, "baseline (1 s poller)")
    finally:
        stop_all([proc])
        server.stop()


_POLL = """
SELECT id, url, run_at, group_key, event_key, context, webhook_id
FROM mbus.timer_callbacks
WHERE status = 'pending' AND run_at <= now()
ORDER BY run_at, id
LIMIT 20000
FOR UPDATE SKIP LOCKED
"""
_DONE = """
UPDATE mbus.timer_callbacks
SET status = 'notified', finished_at = now(), updated_at = now()
WHERE id = ANY(%s)
"""


async def _baseline_worker(dsn: str) -> None:
    """Poll once a second, call every due row, mark them notified in the same transaction."""
    sem = asyncio.Semaphore(CONCURRENCY)
    limits = httpx.Limits(max_connections=CONCURRENCY)
    async with (
        await psycopg.AsyncConnection.connect(dsn) as conn,
        httpx.AsyncClient(timeout=5, limits=limits) as client,
    ):

        async def call(row: tuple[Any, ...]) -> None:
            body = {
                "webhook_id": str(row[6]),
                "group_key": row[3],
                "event_key": row[4],
                "run_at": row[2].isoformat(),
                "context": row[5],
            }
            async with sem:
                await client.post(
                    row[1],
                    content=json.dumps(body, separators=(",", ":")),
                    headers={"webhook-id": str(row[6])},
                )

        while True:
            tick = time.monotonic()
            async with conn.transaction():
                cur = await conn.execute(_POLL)
                rows = await cur.fetchall()
                await asyncio.gather(*(call(r) for r in rows))
                if rows:
                    await conn.execute(_DONE, ([r[0] for r in rows],))
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))


if __name__ == "__main__" and sys.argv[1:2] == ["--baseline-worker"]:
    import contextlib

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_baseline_worker(sys.argv[2]))
