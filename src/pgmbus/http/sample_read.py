"""Reading one dashboard sample (sql/http.sql 'series_sample') so that no one object holds back
the samples of the others.

The sample is one statement over every queue, group and timer client. A queue's table locked
by a transaction left open (a ``drop_queue`` or ``clear_queue`` not yet committed, an
``ALTER TABLE``) would make that statement wait, and with it every chart. So the statements wait
at most ``LOCK_WAIT_S`` for a lock; when one is refused, the queues are read one at a time, each
in its own savepoint, and a queue that is still locked or was just dropped is left out of this
sample (its chart shows a gap) while the others go on.
"""

from __future__ import annotations

import logging
from typing import Any

from psycopg import AsyncCursor, errors
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from pgmbus.data.service import SERVICE

log = logging.getLogger(__name__)

# How long a sample waits for any one lock: far below the sampling pace (10 s by default).
LOCK_WAIT_S = 0.2

# A queue that cannot be read now: locked past the wait, or dropped since the list was read.
_UNREADABLE = (errors.LockNotAvailable, errors.UndefinedTable)


class SampleReader:
    """Reads samples from ``pool``; ``skipped`` names the queues left out of the last one."""

    def __init__(self, pool: AsyncConnectionPool[Any], late_s: float) -> None:
        self.pool = pool
        self.late_s = late_s
        self.skipped: list[str] = []

    async def __call__(self) -> dict[str, Any]:
        """One sample, as the 'series_sample' row's ``sample`` object."""
        async with self.pool.connection() as conn, conn.transaction():
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(SERVICE["series_lock_wait"], {"wait": f"{LOCK_WAIT_S * 1000:.0f}"})
            try:
                async with conn.transaction():
                    sample = await self._sample(cur, with_queues=True)
                self._note([])
                return sample
            except _UNREADABLE:
                pass  # some queue cannot be read now: read them one by one
            sample = await self._sample(cur, with_queues=False)
            await cur.execute(SERVICE["series_queue_names"])
            names = [row["qname"] for row in await cur.fetchall()]
            queues: list[Any] = []
            skipped: list[str] = []
            for name in names:
                try:
                    async with conn.transaction():
                        await cur.execute(SERVICE["series_queue_sample"], {"queue": name})
                        row = await cur.fetchone()
                except _UNREADABLE:
                    skipped.append(name)
                    continue
                queues += row["queues"] if row is not None else []
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
