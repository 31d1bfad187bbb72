"""Long-polled leases (``wait_s``) that cannot starve the service or claim for a gone client.

A wait holds no connection of the bus pool that posts, acks and short leases use: each lease
attempt is one short statement (``wait=0``), and between attempts the request waits for the
queue's NOTIFY on a connection of a separate, bounded set of listeners. When every listener is
taken, a wait polls instead (a lease attempt every ``poll_s``, no connection held), so one
client's idle long-polls delay no one else's calls. A client that has hung up is noticed before
every attempt: its wait ends without claiming, so no message is leased to no one (a disconnect
during the attempt itself still can: that message comes back when its lease ends).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta

from pgmbus.queues import AsyncBus, Message


class LongPolls:
    """The listeners of long-polled leases: at most ``listeners`` waits LISTEN at once."""

    def __init__(self, dsn: str, *, listeners: int, poll_s: float = 1.0) -> None:
        self.listeners = listeners
        self.poll_s = poll_s
        # its own pool: a wait never holds a connection that posts and acks need
        self.bus = AsyncBus(dsn, max_size=max(1, listeners), poll_interval=poll_s)
        self._free = asyncio.Semaphore(max(1, listeners))

    async def open(self) -> None:
        """Open the listeners' pool."""
        await self.bus.open()

    async def close(self) -> None:
        """Close the listeners' pool."""
        await self.bus.close()

    async def lease(
        self,
        bus: AsyncBus,
        queue: str,
        consumer: str,
        *,
        limit: int,
        lease: float | timedelta,
        max_attempts: int | None,
        wait_s: float,
        gone: Callable[[], Awaitable[bool]],
    ) -> list[Message]:
        """Lease from ``queue`` on ``bus``, waiting up to ``wait_s`` for a message; [] when
        nothing came in time or the client is ``gone`` (asked before every attempt)."""

        async def attempt() -> list[Message]:
            return await bus.lease(
                queue, consumer, limit=limit, lease=lease, max_attempts=max_attempts
            )

        got = await attempt()
        if got or wait_s <= 0:
            return got
        deadline = time.monotonic() + wait_s
        if self._free.locked():  # every listener taken: poll, holding nothing
            while (remaining := deadline - time.monotonic()) > 0:
                await asyncio.sleep(min(remaining, self.poll_s))
                if await gone():
                    return []
                if got := await attempt():
                    return got
            return []
        async with self._free, self.bus.wakeups(queue) as wakeups:
            while True:
                if await gone():
                    return []
                got = await attempt()  # after LISTEN: no post slips in between
                remaining = deadline - time.monotonic()
                if got or remaining <= 0:
                    return got
                # at most poll_s per wait, so a client that hung up is noticed that soon
                await wakeups.wait(min(remaining, self.poll_s))
