"""Timer creation through the HTTP API: batched writes (candidate) vs one write per request.

Both sides run ``pgmbus serve --no-dispatcher`` in its own process and receive the same
concurrent ``POST /v1/callbacks`` load from this process (64 requests in flight); the candidate
buffers creates and writes up to 200 per statement (flushing at least every 50 ms, answering
after the commit), the baseline writes each create in its own transaction (``--batch-size 1``).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import httpx

from bench.harness import Measurement
from bench.scenarios._timers_common import bench_client, free_port, reset, spawn, stop_all

name = "timers_create"
unit = "creates"
goal = "batched API creates vs one write per create (expect > 1x)"
default_size = 3_000
IN_FLIGHT = 64

_key: dict[str, str] = {}


def setup(dsn: str, size: int) -> None:
    _key[dsn] = bench_client(dsn)[1]


async def _load(base: str, key: str, size: int) -> float:
    run_at = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    headers = {"authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=8, max_keepalive_connections=8)
    clients = [
        httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=60)
        for _ in range(IN_FLIGHT // 8)
    ]
    next_i = 0

    async def worker(w: int) -> None:
        nonlocal next_i
        client = clients[w % len(clients)]
        while next_i < size:
            i = next_i
            next_i += 1
            body = {
                "group_key": "bench",
                "event_key": f"e{i}",
                "run_at": run_at,
                "url": "https://example.com/hook",
            }
            r = await client.post("/v1/callbacks", json=body)
            if r.status_code != 201:
                raise RuntimeError(f"create failed: {r.status_code} {r.text}")

    start = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(IN_FLIGHT)))
    elapsed = time.perf_counter() - start
    for c in clients:
        await c.aclose()
    return elapsed


def _run(dsn: str, size: int, batch_size: int) -> Measurement:
    reset(dsn)
    port = free_port()
    proc = spawn(
        "pgmbus",
        "serve",
        "--dsn",
        dsn,
        "--port",
        str(port),
        "--no-dispatcher",
        "--batch-size",
        str(batch_size),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                if httpx.get(base + "/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.time() > deadline or proc.poll() is not None:
                raise RuntimeError("pgmbus serve did not start")
            time.sleep(0.1)
        asyncio.run(_load(base, _key[dsn], 50))  # warm up connections and the pool
        reset(dsn)
        seconds = asyncio.run(_load(base, _key[dsn], size))
        return Measurement(size, seconds)
    finally:
        stop_all([proc])


def candidate(dsn: str, size: int) -> Measurement:
    return _run(dsn, size, 200)


def baseline(dsn: str, size: int) -> Measurement:
    return _run(dsn, size, 1)
