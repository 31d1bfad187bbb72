"""Which real database errors count as transient, and the backoff's bounds."""

from __future__ import annotations

import psycopg
import pytest

from pgmbus.errors import NotFound, translate
from pgmbus.reconnect import Backoff, is_transient


def _error_of(dsn: str, statement: str, options: str = "") -> psycopg.Error:
    with psycopg.connect(dsn, autocommit=True, options=options) as conn:
        try:
            conn.execute(statement)
        except psycopg.Error as exc:
            return exc
    raise AssertionError("no error")


def test_a_terminated_backend_is_transient(db_dsn: str) -> None:
    conn = psycopg.connect(db_dsn, autocommit=True)
    try:
        with pytest.raises(psycopg.OperationalError) as info:
            conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")
    finally:
        conn.close()
    assert is_transient(info.value)


def test_timeouts_are_transient_also_when_translated(db_dsn: str) -> None:
    timeout = _error_of(db_dsn, "SELECT pg_sleep(1)", "-c statement_timeout=50")
    assert timeout.sqlstate == "57014" and is_transient(timeout)
    assert is_transient(translate(timeout)), "a typed pgmbus error keeps its cause"


def test_errors_of_the_request_are_not_transient(db_dsn: str) -> None:
    assert not is_transient(_error_of(db_dsn, "SELECT 1/0"))
    assert not is_transient(_error_of(db_dsn, "SELECT mbus.no_such_function()"))
    assert not is_transient(NotFound("queue q does not exist"))
    assert not is_transient(ValueError("x"))


def test_a_refused_connection_is_transient() -> None:
    with pytest.raises(psycopg.OperationalError) as info:
        psycopg.connect("host=127.0.0.1 port=1 connect_timeout=2")
    assert is_transient(info.value)


def test_backoff_grows_with_jitter_up_to_its_cap_and_resets() -> None:
    backoff = Backoff(base=0.1, cap=1.0)
    delays = [backoff.next() for _ in range(8)]
    assert 0.05 <= delays[0] <= 0.1
    assert all(0.5 <= d <= 1.0 for d in delays[4:]), delays
    backoff.reset()
    assert backoff.next() <= 0.1
