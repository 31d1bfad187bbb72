"""The application's open transaction that a Celery task sent now joins.

The Kombu transport asks :func:`joining` on each send. A send joins, in this order:

1. nothing, when the send opts out (``apply_async(..., pgmbus_transactional=False)`` or the
   header of that name; a ``task_routes`` entry can carry the option for a whole task), or when
   it is Celery's retry of the task running now (its retry must outlive the task's rollback);
2. the psycopg connection or SQLAlchemy session bound by :func:`bind` (``with
   pgmbus.contrib.celery.transaction(conn)`` / ``bind_session(session)``);
3. Django's connection (the pgmbus alias, ``default`` unless ``PGMBUS["DATABASE"]``) while it
   is in a transaction (``transaction.atomic`` or autocommit turned off).

A connection on another database than the broker's is not joined: the task is posted on the
transport's own connection (committed at once), as without a transaction.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import psycopg

from pgmbus.errors import ConfigurationError, InvalidArgument, translating

log = logging.getLogger("pgmbus.kombu")

OPTION = "pgmbus_transactional"

# What the current context bound: a function giving the connection to post on, and a label
_bound: ContextVar[tuple[Callable[[], Any], str] | None] = ContextVar(
    "pgmbus_celery_bound", default=None
)

# The server, database and start of a connection: equal for two connections exactly when they
# reach the same database of the same running cluster. Nothing in it can fail (no privilege,
# no table), so asking it inside the application's transaction never aborts that transaction.
# All text: the application's connection may load types its own way (Django does).
_IDENTITY_SQL = (
    "SELECT current_database()::text, current_setting('port'),"
    " extract(epoch FROM pg_postmaster_start_time())::text,"
    " (SELECT oid::text FROM pg_database WHERE datname = current_database())"
)
_identities: weakref.WeakKeyDictionary[psycopg.Connection[Any], tuple[Any, ...]] = (
    weakref.WeakKeyDictionary()
)
_told_other_database: set[tuple[Any, ...]] = set()


@contextlib.contextmanager
def bind(connect: Callable[[], Any], label: str) -> Iterator[None]:
    """Within the block, sends join the transaction of the connection ``connect()`` gives."""
    token = _bound.set((connect, label))
    try:
        yield
    finally:
        _bound.reset(token)


def ask_identity(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    """Which database of which running server ``conn`` reaches."""
    with translating():  # an error of the application's connection is typed, not retried
        row = conn.execute(_IDENTITY_SQL).fetchone()
    return tuple(row or ())  # one row: the query reads no table


def identity(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    """:func:`ask_identity`, asked once per connection (a connection never moves)."""
    known = _identities.get(conn)
    if known is None:
        known = _identities[conn] = ask_identity(conn)
    return known


def opted_out(message: dict[str, Any]) -> bool:
    """Whether the send said ``pgmbus_transactional=False`` (the property is removed)."""
    properties = message.get("properties")
    headers = message.get("headers")
    said = properties.pop(OPTION, None) if isinstance(properties, dict) else None
    if said is None and isinstance(headers, dict):
        said = headers.get(OPTION)
    if said is None:
        return False
    if not isinstance(said, bool):
        raise InvalidArgument(f"{OPTION} must be True or False, not {said!r}", sqlstate="MB006")
    return not said


def _retry_of_running_task(message: dict[str, Any]) -> bool:
    """Celery's ``self.retry()`` sends the running task's id again; that send must survive the
    rollback of the task's transaction, else the task is acked as retried and never runs."""
    celery = sys.modules.get("celery")
    headers = message.get("headers")
    if celery is None or not isinstance(headers, dict) or "id" not in headers:
        return False
    task = celery.current_task
    request = getattr(task, "request", None) if task else None
    return request is not None and getattr(request, "id", None) == headers["id"]


def _django_connection() -> psycopg.Connection[Any] | None:
    """Django's connection of the pgmbus alias, when it is in a transaction."""
    if "django.db" not in sys.modules:
        return None  # the application never touched Django's database
    from django.conf import settings

    if not settings.configured:
        return None
    from django.db import connections

    from pgmbus.contrib.django import database_alias

    alias = database_alias()
    if alias not in connections.settings:
        return None
    wrapper = connections[alias]
    if wrapper.vendor != "postgresql" or wrapper.connection is None:
        return None
    if not wrapper.in_atomic_block and wrapper.get_autocommit():
        return None
    raw = wrapper.connection
    if not isinstance(raw, psycopg.Connection):
        raise ConfigurationError(
            f"Django's database {alias!r} is not on psycopg 3 ({type(raw).__module__}): a task"
            f" sent in its transaction cannot join it; install psycopg 3 or send with"
            f" {OPTION}=False"
        )
    return raw


def _bound_connection() -> tuple[psycopg.Connection[Any], str] | None:
    bound = _bound.get()
    if bound is None:
        return None
    connect, label = bound
    conn = connect()
    if not isinstance(conn, psycopg.Connection):
        raise ConfigurationError(
            f"{label} is not on psycopg 3 ({type(conn).__module__}.{type(conn).__name__}):"
            f" a task cannot join its transaction"
        )
    return conn, label


def joining(message: dict[str, Any], broker: Callable[[bool], tuple[Any, ...]]) -> Any:
    """The application connection whose transaction this send joins; None: the transport's.

    ``broker(fresh)`` gives the broker database's :func:`identity` (asked again if ``fresh``:
    a restarted server has a new one).
    """
    if opted_out(message) or _retry_of_running_task(message):
        return None
    found = _bound_connection()
    if found is None:
        django = _django_connection()
        if django is None:
            return None
        found = django, "Django's connection"
    conn, label = found
    mine = identity(conn)
    if mine == broker(False):
        return conn
    if mine not in _told_other_database:
        if mine == broker(True):
            return conn
        _told_other_database.add(mine)
        log.info(
            "%s reaches database %r, not the broker's: tasks sent in its transactions are"
            " posted at once on the broker's connection",
            label,
            mine[0],
        )
    return None
