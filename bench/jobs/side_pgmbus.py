"""pgmbus: ``AsyncBus.post``/``post_batch`` and ``pgmbus worker`` (three handler settings)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import psycopg

from bench.jobs.side import QUEUE, Enqueuer, Env, python
from bench.scenarios._queues import fresh_queue
from pgmbus.queues import AsyncBus


class _Enqueuer:
    def __init__(self, bus: AsyncBus, dsn: str) -> None:
        self.bus = bus
        self.dsn = dsn

    async def one(self, n: int) -> None:
        await self.bus.post(QUEUE, {"n": n})

    async def batch(self, ns: Sequence[int]) -> None:
        await self.bus.post_batch(QUEUE, [{"n": n} for n in ns])

    async def rolled_back(self, n: int) -> None:
        async with await psycopg.AsyncConnection.connect(self.dsn) as conn:
            await self.bus.post(QUEUE, {"n": n}, conn=conn)  # joins conn's transaction
            await conn.rollback()


@dataclass
class PgmbusSide:
    name: str
    mode: str  # BENCH_JOBS_MODE of bench.jobs.pgmbus_app
    about: str
    server: str | None = None
    postgres: bool = True

    async def prepare(self, env: Env) -> None:
        await self.purge(env)

    async def purge(self, env: Env) -> None:
        fresh_queue(env.dsn, QUEUE)

    @asynccontextmanager
    async def enqueuer(self, env: Env) -> AsyncIterator[Enqueuer]:
        async with AsyncBus(env.dsn, max_size=1) as bus:
            yield _Enqueuer(bus, env.dsn)

    def worker_argv(self, env: Env) -> list[str]:
        return [python(), "-m", "pgmbus", "worker", "bench.jobs.pgmbus_app:bus", "--dsn", env.dsn]

    def worker_extra_env(self, env: Env) -> dict[str, str]:
        # the app's module-level Bus() resolves its DSN when it is made, before --dsn applies
        return {"BENCH_JOBS_MODE": self.mode, "PGMBUS_DSN": env.dsn}


SIDES = [
    PgmbusSide("pgmbus", "defaults", "pgmbus worker, handler defaults (def)"),
    PgmbusSide("pgmbus-threads4", "threads4", "pgmbus worker, def with concurrency=4"),
    PgmbusSide("pgmbus-async16", "async16", "pgmbus worker, async def with concurrency=16"),
]
