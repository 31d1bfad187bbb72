"""pgmbus in FastAPI: a pool opened by the app's lifespan, and posts in the request's transaction.

.. code-block:: python

    from fastapi import Depends, FastAPI
    from pgmbus.contrib.fastapi import Transaction, get_bus, lifespan

    app = FastAPI(lifespan=lifespan(dsn))

    @app.post("/orders")
    async def place(order: dict, conn: Transaction, bus: Bus = Depends(get_bus)):
        await conn.execute("INSERT INTO orders ...")
        await bus.post("orders", order, conn=conn)   # commits with the INSERT, or not at all

``Transaction`` is a dependency that yields a pooled connection inside a transaction: it commits
when the endpoint returns (before the response is sent) and rolls back when it raises.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from pgmbus.dsn import resolve_dsn
from pgmbus.errors import ConfigurationError
from pgmbus.queues import AsyncBus


def lifespan(
    dsn: str | None = None, *, min_size: int = 1, max_size: int = 10
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """A FastAPI ``lifespan`` that opens a pool and an ``AsyncBus`` for the app's lifetime.

    Parameters
    ----------
    dsn:
        The database (the DSN rule applies: else ``PGMBUS_DSN``, else the embedded cluster).
    min_size, max_size:
        Pool bounds. Connections are in autocommit mode; ``Transaction`` opens a transaction.

    The pool and the bus are on ``app.state.pgmbus_pool`` and ``app.state.pgmbus_bus``.
    """

    @asynccontextmanager
    async def run(app: FastAPI) -> AsyncIterator[None]:
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            resolve_dsn(dsn),
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True},
            open=False,
        )
        await pool.open(wait=True)
        app.state.pgmbus_pool = pool
        app.state.pgmbus_bus = AsyncBus(pool=pool)
        try:
            yield
        finally:
            await pool.close()

    return run


def get_pool(request: Request) -> AsyncConnectionPool[Any]:
    """Dependency: the app's pool (``lifespan`` must be the app's lifespan)."""
    pool: AsyncConnectionPool[Any] | None = getattr(request.app.state, "pgmbus_pool", None)
    if pool is None:
        raise ConfigurationError("pgmbus pool missing: create the app with lifespan=lifespan(...)")
    return pool


def get_bus(request: Request) -> AsyncBus:
    """Dependency: the app's ``AsyncBus``."""
    get_pool(request)
    bus: AsyncBus = request.app.state.pgmbus_bus
    return bus


async def transaction(
    pool: Annotated[AsyncConnectionPool[Any], Depends(get_pool)],
) -> AsyncIterator[AsyncConnection[Any]]:
    """Dependency: a connection inside a transaction for the request.

    The transaction commits when the endpoint returns and rolls back when it raises, so a
    message posted with ``bus.post(..., conn=conn)`` exists exactly when the request succeeded.
    """
    async with pool.connection() as conn, conn.transaction():
        yield conn


Transaction = Annotated[AsyncConnection[Any], Depends(transaction)]
Bus = Annotated[AsyncBus, Depends(get_bus)]

__all__ = ["Bus", "Transaction", "get_bus", "get_pool", "lifespan", "transaction"]
