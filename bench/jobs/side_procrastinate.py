"""procrastinate: ``defer_async``/``batch_defer_async`` and its worker (concurrency 4).

procrastinate defers on its connector's own pool, so a job deferred while the caller's
transaction is open does not join it (the rolled-back check shows what that means).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

from bench.jobs.procrastinate_app import TASK, make_app
from bench.jobs.side import QUEUE, Enqueuer, Env, python


class _Enqueuer:
    def __init__(self, app: Any, dsn: str) -> None:
        self.task = app.configure_task(TASK, queue=QUEUE)
        self.dsn = dsn

    async def one(self, n: int) -> None:
        await self.task.defer_async(n=n)

    async def batch(self, ns: Sequence[int]) -> None:
        await self.task.batch_defer_async(*({"n": n} for n in ns))

    async def rolled_back(self, n: int) -> None:
        async with await psycopg.AsyncConnection.connect(self.dsn) as conn:
            await conn.execute("SELECT 1")  # a transaction is open
            await self.task.defer_async(n=n)
            await conn.rollback()


@dataclass
class ProcrastinateSide:
    name: str = "procrastinate"
    server: str | None = None
    postgres: bool = True
    about: str = "procrastinate worker, async task, concurrency 4"

    async def prepare(self, env: Env) -> None:
        app = make_app(env.dsn)
        async with app.open_async():
            await app.schema_manager.apply_schema_async()

    async def purge(self, env: Env) -> None:
        async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as conn:
            await conn.execute("TRUNCATE procrastinate_jobs CASCADE")

    @asynccontextmanager
    async def enqueuer(self, env: Env) -> AsyncIterator[Enqueuer]:
        app = make_app(env.dsn)
        async with app.open_async():
            yield _Enqueuer(app, env.dsn)

    def worker_argv(self, env: Env) -> list[str]:
        return [python(), "-m", "bench.jobs.procrastinate_app"]

    def worker_extra_env(self, env: Env) -> dict[str, str]:
        return {"BENCH_JOBS_DSN": env.dsn}


SIDES = [ProcrastinateSide()]
