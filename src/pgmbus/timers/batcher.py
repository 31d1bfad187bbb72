"""Buffer create requests and write them in batches: at ``max_items`` or after ``max_wait_s``.

Each request is answered after its batch is committed (as the original design does: flush at N items
or 50 ms, answer after the write). A batch that fails as a whole is retried item by item, so one bad
item fails only its own request.
"""

from __future__ import annotations

import asyncio
from typing import Any

from psycopg_pool import AsyncConnectionPool

from pgmbus import tracing
from pgmbus.errors import PgmbusError
from pgmbus.timers import store_async as store
from pgmbus.timers.records import Callback

Result = tuple[bool, Callback]


class CreateBatcher:
    """Batch ``store.create_many`` calls over a connection pool.

    Parameters
    ----------
    pool:
        The connection pool to write with.
    max_items:
        Flush when this many requests wait (1 disables batching).
    max_wait_s:
        Flush at the latest this long after the first waiting request.
    max_parallel:
        Batches written at the same time.
    """

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        *,
        max_items: int = 200,
        max_wait_s: float = 0.05,
        max_parallel: int = 4,
    ) -> None:
        self.pool = pool
        self.max_items = max(1, max_items)
        self.max_wait_s = max_wait_s
        self._sem = asyncio.Semaphore(max_parallel)
        self._pending: list[tuple[dict[str, Any], asyncio.Future[Result]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.batches = 0

    async def submit(self, item: dict[str, Any]) -> Result:
        """Queue one create; return ``(created, callback)`` once its batch is committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        item = tracing.with_trace(item)  # the caller's trace: the batch commits in another task
        self._pending.append((item, future))
        if len(self._pending) >= self.max_items:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self.max_wait_s, self._flush)
        return await future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if batch:
            task = asyncio.create_task(self._write(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _write(self, batch: list[tuple[dict[str, Any], asyncio.Future[Result]]]) -> None:
        async with self._sem:
            self.batches += 1
            try:
                async with self.pool.connection() as conn:
                    results = await store.create_many(conn, [item for item, _ in batch])
            except Exception as exc:
                if len(batch) == 1 or not isinstance(exc, PgmbusError):
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    return
                for one in batch:
                    await self._write_alone(*one)
                return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)

    async def _write_alone(self, item: dict[str, Any], future: asyncio.Future[Result]) -> None:
        try:
            async with self.pool.connection() as conn:
                result = (await store.create_many(conn, [item]))[0]
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
            return
        if not future.done():
            future.set_result(result)

    async def close(self) -> None:
        """Write what is queued and wait for the batches in flight."""
        self._flush()
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
