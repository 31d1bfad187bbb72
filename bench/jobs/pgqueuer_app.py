"""PgQueuer's worker process: ``python -m bench.jobs.pgqueuer_app`` (DSN in ``BENCH_JOBS_DSN``).

A ``QueueManager`` with PgQueuer's defaults (``batch_size=10``, continuous mode) and an async
no-op entrypoint, as its documentation shows.
"""

from __future__ import annotations

import asyncio
import os

import psycopg
from pgqueuer import Job, Queries, QueueManager
from pgqueuer.db import PsycopgDriver

from bench.jobs import record


async def main() -> None:
    conn = await psycopg.AsyncConnection.connect(os.environ["BENCH_JOBS_DSN"], autocommit=True)
    qm = QueueManager(Queries(PsycopgDriver(conn)))

    @qm.entrypoint("jobs")
    async def noop(job: Job) -> None:
        record.job(int(job.payload or b"0"))

    await qm.run()


if __name__ == "__main__":
    asyncio.run(main())
