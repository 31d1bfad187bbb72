"""PgQueuer: ``Queries.enqueue`` (one, or lists for a batch) and its ``QueueManager`` worker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

from bench.jobs.side import QUEUE, Enqueuer, Env, python


class _Enqueuer:
    def __init__(self, conn: psycopg.AsyncConnection[Any], dsn: str) -> None:
        from pgqueuer import Queries
        from pgqueuer.db import PsycopgDriver

        self.queries = Queries(PsycopgDriver(conn))
        self.dsn = dsn

    async def one(self, n: int) -> None:
        await self.queries.enqueue(QUEUE, str(n).encode())

    async def batch(self, ns: Sequence[int]) -> None:
        await self.queries.enqueue([QUEUE] * len(ns), [str(n).encode() for n in ns], [0] * len(ns))

    async def rolled_back(self, n: int) -> None:
        from pgqueuer import Queries
        from pgqueuer.db import PsycopgDriver

        # PgQueuer's driver wants an autocommit connection; a transaction block on it is how
        # its enqueue joins the caller's transaction
        conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        async with conn, conn.transaction(force_rollback=True):
            await Queries(PsycopgDriver(conn)).enqueue(QUEUE, str(n).encode())


@dataclass
class PgQueuerSide:
    name: str = "pgqueuer"
    server: str | None = None
    postgres: bool = True
    about: str = "PgQueuer QueueManager, its defaults (batch_size 10, async entrypoint)"

    async def prepare(self, env: Env) -> None:
        from pgqueuer import Queries
        from pgqueuer.db import PsycopgDriver

        async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as conn:
            await Queries(PsycopgDriver(conn)).install()

    async def purge(self, env: Env) -> None:
        from pgqueuer import Queries
        from pgqueuer.db import PsycopgDriver

        async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as conn:
            await Queries(PsycopgDriver(conn)).clear_queue()

    @asynccontextmanager
    async def enqueuer(self, env: Env) -> AsyncIterator[Enqueuer]:
        async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as conn:
            yield _Enqueuer(conn, env.dsn)

    def worker_argv(self, env: Env) -> list[str]:
        return [python(), "-m", "bench.jobs.pgqueuer_app"]

    def worker_extra_env(self, env: Env) -> dict[str, str]:
        return {"BENCH_JOBS_DSN": env.dsn}


SIDES = [PgQueuerSide()]
