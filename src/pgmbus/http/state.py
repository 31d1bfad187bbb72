"""What the HTTP service holds while it runs: its pool, the queue bus, the timers batcher and
network guard."""

from __future__ import annotations

from typing import Any, LiteralString

from fastapi import Request
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from pgmbus.data.service import SERVICE
from pgmbus.errors import translating
from pgmbus.http.config import ServiceConfig
from pgmbus.http.listeners import ListenerHub
from pgmbus.http.long_poll import LongPolls
from pgmbus.queues import AsyncBus
from pgmbus.timers.batcher import CreateBatcher
from pgmbus.timers.netguard import NetworkGuard, networks_from_env


def query(name: str) -> LiteralString:
    """A named query of ``sql/http.sql``."""
    return SERVICE[name]


class AppState:
    """The pool and helpers shared by the routers (``request.app.state.pgmbus``)."""

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        # transactions: the streams and timers clients (both asyncio) and the HTTP layer's own
        # queries; one pool, no worker threads for database calls
        self.pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            config.dsn,
            min_size=1,
            max_size=config.pool_size,
            open=False,
            kwargs={"autocommit": False},
        )
        self.bus = AsyncBus(config.dsn, max_size=config.pool_size)
        # long-polled leases wait on their own bounded listeners, never on the bus pool
        self.long_polls = LongPolls(config.dsn, listeners=config.max_listening_waits)
        self.batcher = CreateBatcher(
            self.pool, max_items=config.batch_max_items, max_wait_s=config.batch_max_wait_s
        )
        self.auth: dict[str, tuple[Any, float]] = {}
        # one guard for the create-time URL checks and the in-process dispatcher
        self.guard = config.guard or NetworkGuard(networks_from_env())
        self._has_scopes: bool | None = None
        # the live listeners (SSE) of subscriptions: one reader task, started by the first
        self.listeners = ListenerHub(
            self.pool,
            config.dsn,
            max_listener_bytes=config.max_listener_bytes,
            max_listeners_per_key=config.max_listeners_per_key,
        )

    async def open(self) -> None:
        """Open the pools."""
        await self.pool.open(wait=True)
        await self.bus.open()
        await self.long_polls.open()

    async def close(self) -> None:
        """End the live listeners, flush the batcher and close the pools."""
        await self.listeners.close()
        await self.batcher.close()
        await self.long_polls.close()
        await self.bus.close()
        await self.pool.close()

    async def has_scopes(self) -> bool:
        """Is the scopes DDL installed in the database (checked once)?"""
        if self._has_scopes is None:
            self._has_scopes = bool(await self.value(query("has_scopes"), {}))
        return self._has_scopes

    async def rows(self, sql: LiteralString, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Run ``sql`` (a named query: ``query(name)``) in its own transaction; dict rows."""
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            with translating():
                await cur.execute(sql, params)
                return [] if cur.description is None else await cur.fetchall()

    async def value(self, sql: LiteralString, params: dict[str, Any]) -> Any:
        """The first column of the first row of ``sql`` (None without rows)."""
        rows = await self.rows(sql, params)
        return next(iter(rows[0].values())) if rows else None


def state_of(request: Request) -> AppState:
    """The service state of the application serving ``request``."""
    state: AppState = request.app.state.pgmbus
    return state
