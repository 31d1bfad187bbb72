"""Fixtures of the queue tests: a connection in a rolled-back transaction with a queue made."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row


@pytest.fixture
def qconn(shared_dsn: str) -> Iterator[psycopg.Connection[dict[str, Any]]]:
    """A dict-row connection in a transaction rolled back after the test; queue ``jobs`` exists."""
    with psycopg.connect(shared_dsn, row_factory=dict_row) as connection:
        try:
            connection.execute("SELECT mbus.create_queue('jobs', 4)")
            yield connection
        finally:
            connection.rollback()


@pytest.fixture
def autodb(db_dsn: str) -> Iterator[str]:
    """A fresh database (committing tests) with queue ``jobs``; yields its DSN."""
    with psycopg.connect(db_dsn, autocommit=True) as connection:
        connection.execute("SELECT mbus.create_queue('jobs', 4)")
    yield db_dsn
