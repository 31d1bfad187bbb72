"""The same post + consume work through PgQueuer (PyPI, the ``bench`` extra), same server and run.

Work: post ``size`` messages one per transaction from one producer, then drain them with one
consumer taking batches of 10. Candidate: ``AsyncBus.post`` and ``AsyncBus.consume(limit=10)``
inside a transaction per batch (a message is gone exactly when its batch commits). Baseline:
``Queries.enqueue`` and a ``QueueManager`` in drain mode with ``batch_size=10`` and a no-op
entrypoint. The goal is the candidate at >= 2x PgQueuer.
"""

from __future__ import annotations

import asyncio
import time

import psycopg

from bench.harness import Measurement
from bench.scenarios._queues import fresh_queue
from pgmbus.queues import AsyncBus

name = "peer_pgqueuer"
unit = "messages"
goal = "pgmbus >= 2x PgQueuer on post + consume"
default_size = 2_000


def setup(dsn: str, size: int) -> None:
    from pgqueuer import Queries
    from pgqueuer.db import PsycopgDriver

    async def install() -> None:
        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        try:
            await Queries(PsycopgDriver(conn)).install()
        finally:
            await conn.close()

    asyncio.run(install())
    fresh_queue(dsn, "peer")


async def _pgmbus(dsn: str, size: int) -> float:
    fresh_queue(dsn, "peer")
    async with AsyncBus(dsn, max_size=2) as bus:
        start = time.perf_counter()
        for n in range(size):
            await bus.post("peer", {"n": n})
        got = 0
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            while got < size:
                batch = await bus.consume("peer", limit=10, conn=conn)
                await conn.commit()
                got += len(batch)
        return time.perf_counter() - start


async def _pgqueuer(dsn: str, size: int) -> float:
    from pgqueuer import Job, Queries, QueueManager
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.types import QueueExecutionMode

    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    try:
        queries = Queries(PsycopgDriver(conn))
        await queries.clear_queue()
        start = time.perf_counter()
        for n in range(size):
            await queries.enqueue("peer", str(n).encode())
        qm = QueueManager(queries)
        seen = 0

        @qm.entrypoint("peer")
        async def handle(job: Job) -> None:
            nonlocal seen
            seen += 1

        await qm.run(batch_size=10, mode=QueueExecutionMode.drain)
        assert seen == size, (seen, size)
        return time.perf_counter() - start
    finally:
        await conn.close()


def candidate(dsn: str, size: int) -> Measurement:
    return Measurement(size, asyncio.run(_pgmbus(dsn, size)))


def baseline(dsn: str, size: int) -> Measurement:
    return Measurement(size, asyncio.run(_pgqueuer(dsn, size)))
