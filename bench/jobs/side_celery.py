"""Celery on ``pgmbus://``, on Redis and on RabbitMQ: ``delay`` and one worker process.

The worker: ``celery worker --pool threads --concurrency 4`` (one process, as for the other
sides; the prefork default would fork one process per core). Batch enqueue: Celery has no bulk
publish, so a batch is ``apply_async`` on one producer (one connection) per batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

from bench.jobs.side import QUEUE, Enqueuer, Env, python
from pgmbus.contrib.kombu_transport import url_from_dsn


def make_app(url: str) -> Any:
    """The same settings on every broker: no result backend, remote control off (the worker
    runs without gossip, mingle and heartbeats too), else the defaults."""
    from celery import Celery

    import pgmbus.contrib.kombu_transport  # noqa: F401

    app = Celery("bench_jobs", broker=url)
    app.conf.worker_enable_remote_control = False
    app.conf.task_default_queue = QUEUE
    return app


class _Enqueuer:
    def __init__(self, app: Any, dsn: str) -> None:
        self.app = app
        self.dsn = dsn

    def _send(self, n: int, **options: Any) -> None:
        self.app.send_task("bench_jobs.noop", args=(n,), **options)

    async def one(self, n: int) -> None:
        self._send(n)

    async def batch(self, ns: Sequence[int]) -> None:
        with self.app.producer_or_acquire() as producer:
            for n in ns:
                self._send(n, producer=producer)

    async def rolled_back(self, n: int) -> None:
        async with await psycopg.AsyncConnection.connect(self.dsn) as conn:
            await conn.execute("SELECT 1")  # a transaction is open
            self._send(n)  # the broker is not in it
            await conn.rollback()


@dataclass
class CelerySide:
    name: str
    server: str | None
    about: str
    postgres: bool = False

    def url(self, env: Env) -> str:
        return env.brokers[self.server] if self.server else url_from_dsn(env.dsn)

    async def prepare(self, env: Env) -> None:
        await self.purge(env)

    async def purge(self, env: Env) -> None:
        app = make_app(self.url(env))

        def purge() -> None:
            with app.connection_for_write() as conn:
                conn.default_channel.queue_declare(QUEUE, durable=True, auto_delete=False)
                conn.default_channel.queue_purge(QUEUE)

        await asyncio.to_thread(purge)
        app.close()

    @asynccontextmanager
    async def enqueuer(self, env: Env) -> AsyncIterator[Enqueuer]:
        app = make_app(self.url(env))
        try:
            yield _Enqueuer(app, env.dsn)
        finally:
            app.close()

    def worker_argv(self, env: Env) -> list[str]:
        return [
            python(), "-m", "celery", "-A", "bench.jobs.celery_app", "worker",
            "--pool", "threads", "--concurrency", "4", "--queues", QUEUE,
            "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING",
        ]  # fmt: skip

    def worker_extra_env(self, env: Env) -> dict[str, str]:
        return {"BENCH_JOBS_BROKER": self.url(env)}


SIDES = [
    CelerySide("celery-pgmbus", None, "Celery on pgmbus://, threads pool, concurrency 4", True),
    CelerySide("celery-redis", "redis", "Celery on Redis (redis-server), threads, concurrency 4"),
    CelerySide("celery-rabbitmq", "rabbitmq", "Celery on RabbitMQ, threads, concurrency 4"),
]
