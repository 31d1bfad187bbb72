"""Celery on pgmbus: tasks sent in the application's transaction commit with it.

Importing this module registers the ``pgmbus://`` broker URL (see
:mod:`pgmbus.contrib.kombu_transport`) and result backend (see
:mod:`pgmbus.contrib.celery_results`). A task sent while the application holds an open
transaction on the broker's database is posted in that transaction: rolled back, the task
never runs; committed, it runs. Django's connection in ``transaction.atomic`` is joined by
itself; a psycopg connection or a SQLAlchemy session is joined within :func:`transaction` or
:func:`bind_session`. ``apply_async(..., pgmbus_transactional=False)`` opts one send out.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

import pgmbus.contrib.kombu_transport  # noqa: F401  (registers pgmbus://)
from pgmbus.contrib.app_transaction import OPTION, bind
from pgmbus.errors import InvalidArgument


@contextmanager
def transaction(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """Within the block, tasks sent (in this thread or task) join ``conn``'s transaction."""
    if not isinstance(conn, psycopg.Connection):
        raise InvalidArgument(
            f"transaction() takes a psycopg 3 Connection, not {type(conn).__name__}",
            sqlstate="MB006",
        )
    with bind(lambda: conn, "the bound psycopg connection"):
        yield


@contextmanager
def bind_session(session: Any) -> Iterator[None]:
    """Within the block, tasks sent join the transaction of SQLAlchemy ``session`` (a
    ``Session`` or ``scoped_session`` on the ``postgresql+psycopg`` dialect).

    A send begins the session's transaction if it has none yet, as adding a row would: the
    task is posted when the session commits, and never if it rolls back.
    """
    if not callable(getattr(session, "connection", None)):
        raise InvalidArgument(
            f"bind_session() takes a SQLAlchemy Session, not {type(session).__name__}",
            sqlstate="MB006",
        )

    def connect() -> Any:
        return session.connection().connection.driver_connection

    with bind(connect, "the bound SQLAlchemy session"):
        yield


__all__ = ["OPTION", "bind_session", "transaction"]
