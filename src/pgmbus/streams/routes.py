"""The mover of subscriptions routed into queues: ``mbus.move_routed`` in a loop."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import psycopg

from pgmbus.data.streams import STREAMS
from pgmbus.streams import client

log = logging.getLogger("pgmbus.streams.routes")


class RouteMover:
    """Post the events of a group's routed subscriptions (``subscribe_queue``) to their queues.

    Each batch is posted and the group's cursor moved in one transaction, so every event
    reaches each route's queue exactly once, also across crashes and concurrent movers (they
    take turns on the group's reader lock). Future-dated events are released before each read.

    Parameters
    ----------
    dsn:
        The database.
    group:
        The group that holds the routed subscriptions (read by this mover only).
    batch:
        Events per transaction.
    """

    def __init__(self, dsn: str, group: str, *, batch: int = 1000) -> None:
        self.dsn = dsn
        self.group = group
        self.batch = batch
        self.moved = 0

    def step(self, conn: psycopg.Connection[Any]) -> int:
        """Move one batch (its own transaction); return the events read."""
        with conn.transaction():
            client.release_scheduled(conn)
        with conn.transaction():
            n = client.move_routed(conn, self.group, limit=self.batch)
        self.moved += n
        return n

    def drain(self) -> int:
        """Move everything due now; return the events read."""
        total = 0
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while n := self.step(conn):
                total += n
        return total

    def run(self, *, stop: Callable[[], bool] = lambda: False, idle_wait: float = 1.0) -> None:
        """Move batches until ``stop()``; sleeps on LISTEN mbus_events while idle."""
        with (
            psycopg.connect(self.dsn, autocommit=True) as listen,
            psycopg.connect(self.dsn, autocommit=True) as conn,
        ):
            listen.execute(STREAMS["await_events"])
            while not stop():
                if self.step(conn):
                    continue
                for _ in listen.notifies(timeout=idle_wait, stop_after=1):
                    pass
