"""Reading the figures of every object (the dashboard's samples, ``/metrics``' snapshot) so that
no one object holds back the others.

Each is one statement over every queue (sql/http.sql 'series_sample', 'snapshot'). A queue's
table locked by a transaction left open (a ``drop_queue`` or ``clear_queue`` not yet
committed, an ``ALTER TABLE``) would make that statement wait, and with it every chart or
scrape. So the statements wait at most ``LOCK_WAIT_S`` for a lock; when one is refused, the
queues are read one at a time, each in its own savepoint, and a queue that is still locked or
was just dropped is left out of this reading (a gap in its chart, no series in that scrape)
while the others go on.
"""

from __future__ import annotations

import logging
from typing import Any

from psycopg import AsyncConnection, AsyncCursor, errors
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from pgmbus.data.service import SERVICE

log = logging.getLogger(__name__)

# How long a reading waits for any one lock: far below the sampling pace (10 s by default) and
# a scrape's timeout.
LOCK_WAIT_S = 0.2

# A queue that cannot be read now: locked past the wait, or dropped since the list was read.
UNREADABLE = (errors.LockNotAvailable, errors.UndefinedTable)


async def bound_lock_waits(conn: AsyncConnection[Any]) -> None:
    """Make the statements of ``conn``'s transaction wait at most ``LOCK_WAIT_S`` for a lock."""
    await conn.execute(SERVICE["series_lock_wait"], {"wait": f"{LOCK_WAIT_S * 1000:.0f}"})


async def each_queue(conn: AsyncConnection[Any], name: str) -> tuple[list[Any], list[str]]:
    """The rows of query ``name`` (its ``queues`` column, for ``%(queue)s``) over every queue
    that can be read now, and the names of those that cannot."""
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(SERVICE["series_queue_names"])
    names = [row["qname"] for row in await cur.fetchall()]
    queues: list[Any] = []
    skipped: list[str] = []
    for queue in names:
        try:
            async with conn.transaction():
                await cur.execute(SERVICE[name], {"queue": queue})
                row = await cur.fetchone()
        except UNREADABLE:
            skipped.append(queue)
            continue
        queues += row["queues"] if row is not None else []
    if skipped:
        log.info("queues left out of this reading (locked or dropped): %s", skipped)
    return queues, skipped


class SampleReader:
    """Reads dashboard samples from ``pool``; ``skipped`` names the queues left out of the
    last one."""

    def __init__(self, pool: AsyncConnectionPool[Any], late_s: float) -> None:
        self.pool = pool
        self.late_s = late_s
        self.skipped: list[str] = []

    async def __call__(self) -> dict[str, Any]:
        """One sample, as the 'series_sample' row's ``sample`` object."""
        async with self.pool.connection() as conn, conn.transaction():
            await bound_lock_waits(conn)
            cur = conn.cursor(row_factory=dict_row)
            try:
                async with conn.transaction():
                    sample = await self._sample(cur, with_queues=True)
                self._note([])
                return sample
            except UNREADABLE:
                pass  # some queue cannot be read now: read them one by one
            sample = await self._sample(cur, with_queues=False)
            queues, skipped = await each_queue(conn, "series_queue_sample")
            self._note(skipped)
            return {**sample, "queues": queues}

    async def _sample(
        self, cur: AsyncCursor[dict[str, Any]], *, with_queues: bool
    ) -> dict[str, Any]:
        params = {"late_s": self.late_s, "with_queues": with_queues}
        await cur.execute(SERVICE["series_sample"], params)
        found: dict[str, Any] = (await cur.fetchall())[0]["sample"]  # one row, always
        return found

    def _note(self, skipped: list[str]) -> None:
        # logged when the set changes, not at every sample while a lock lasts
        if skipped != self.skipped and skipped:
            log.warning("dashboard sample left out queues it cannot read now: %s", skipped)
        self.skipped = skipped
