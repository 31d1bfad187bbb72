"""procrastinate's app and worker process: ``python -m bench.jobs.procrastinate_app``.

The worker runs ``run_worker_async(queues=["jobs"], concurrency=4)`` on an async no-op task
(``BENCH_JOBS_DSN`` names the database).
"""

from __future__ import annotations

import asyncio
import os

import procrastinate

from bench.jobs import record

TASK = "bench_jobs_noop"


def make_app(dsn: str) -> procrastinate.App:
    return procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))


async def main() -> None:
    app = make_app(os.environ["BENCH_JOBS_DSN"])

    @app.task(name=TASK, queue="jobs")
    async def noop(n: int) -> None:
        record.job(n)

    async with app.open_async():
        await app.run_worker_async(queues=["jobs"], concurrency=4)


if __name__ == "__main__":
    asyncio.run(main())
