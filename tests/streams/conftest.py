"""Fixtures of the streams tests: connections to a fresh database, read-all helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from pgmbus import streams

Connect = Callable[..., psycopg.Connection[Any]]


@pytest.fixture
def connect(db_dsn: str) -> Iterator[Connect]:
    """Factory of connections to the test's fresh database, closed after the test."""
    opened: list[psycopg.Connection[Any]] = []

    def factory(*, autocommit: bool = False) -> psycopg.Connection[Any]:
        c = psycopg.connect(db_dsn, autocommit=autocommit)
        opened.append(c)
        return c

    yield factory
    for c in opened:
        c.close()


def drain(
    conn: psycopg.Connection[Any], group: str, *, max_events: int = 1000, slot: int | None = None
) -> list[streams.Event]:
    """Read and commit batches (one transaction each) until the group has nothing new."""
    seen: list[streams.Event] = []
    while True:
        with conn.transaction():
            batch = streams.read_next(conn, group, limit=max_events, slot=slot)
            if not batch:
                return seen
            assert batch.cursor is not None
            streams.commit(conn, group, batch.cursor)
        seen.extend(batch.events)


@pytest.fixture(scope="module")
def shared_stream_dsn(pg_server: Any) -> Iterator[str]:
    """One installed database for a module's property tests (groups keep examples apart)."""
    name = pg_server.create_database()
    yield pg_server.dsn(name)
    pg_server.drop_database(name)
