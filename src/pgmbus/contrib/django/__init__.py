"""pgmbus in Django: the bus on ``DATABASES``, posts in Django's transactions, commands.

Add ``"pgmbus.contrib.django"`` to ``INSTALLED_APPS``; ``manage.py migrate`` installs the mbus
schema (or run ``manage.py pgmbus_install``). ``post`` joins the current ``transaction.atomic``
block of Django's own connection: the message exists exactly when that block commits.
``manage.py pgmbus_worker module:function --queue Q`` handles a queue's messages.

Setting (optional): ``PGMBUS = {"DATABASE": "default"}``, the alias whose database holds mbus.
"""

from __future__ import annotations

import atexit
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool

from pgmbus.queues import Bus

_buses: dict[str, Bus] = {}
# psycopg connection parameters that Django's settings_dict can carry in OPTIONS
_SKIP_OPTIONS = frozenset(
    {"isolation_level", "server_side_binding", "pool", "assume_role", "cursor_factory"}
)


def database_alias(using: str | None = None) -> str:
    """The alias to use: ``using``, else ``settings.PGMBUS["DATABASE"]``, else ``default``."""
    from django.conf import settings

    if using is not None:
        return using
    return str(getattr(settings, "PGMBUS", {}).get("DATABASE", "default"))


def dsn(using: str | None = None) -> str:
    """The libpq DSN of a Django database alias (``NAME``, ``USER``, ``PASSWORD``, ``HOST``,
    ``PORT`` and the string ``OPTIONS`` of ``DATABASES[alias]``)."""
    from django.db import connections

    settings_dict: Mapping[str, Any] = connections[database_alias(using)].settings_dict
    params: dict[str, Any] = {
        "dbname": settings_dict.get("NAME"),
        "user": settings_dict.get("USER"),
        "password": settings_dict.get("PASSWORD"),
        "host": settings_dict.get("HOST"),
        "port": settings_dict.get("PORT"),
    }
    for key, value in (settings_dict.get("OPTIONS") or {}).items():
        if key not in _SKIP_OPTIONS and isinstance(value, str | int):
            params[key] = value
    return make_conninfo(**{k: str(v) for k, v in params.items() if v not in (None, "")})


def bus(using: str | None = None) -> Bus:
    """The process's ``Bus`` on the alias's database, made on first use.

    Its pool starts empty and connects only for calls without ``conn`` (``consume``,
    ``create_queue``...): ``post`` here runs on Django's connection.
    """
    alias = database_alias(using)
    found = _buses.get(alias)
    if found is None:
        pool: ConnectionPool[Any] = ConnectionPool(
            dsn(alias), min_size=0, max_size=4, kwargs={"autocommit": True}, open=False
        )
        pool.open()
        atexit.register(pool.close)
        found = _buses[alias] = Bus(pool=pool)
    return found


def connection(using: str | None = None) -> Any:
    """Django's own psycopg connection of the alias (in the current atomic block, if any)."""
    from django.db import connections

    wrapper = connections[database_alias(using)]
    wrapper.ensure_connection()
    return wrapper.connection


def post(
    queue: str,
    data: Mapping[str, Any],
    *,
    using: str | None = None,
    headers: Mapping[str, Any] | None = None,
    delayed_until: datetime | None = None,
    expires: datetime | None = None,
) -> str:
    """Post a message on Django's connection; returns its iid.

    Inside ``transaction.atomic(using=...)`` the message commits or rolls back with the block;
    outside one it is committed at once (Django's autocommit).
    """
    return bus(using).post(
        queue,
        data,
        headers=headers,
        delayed_until=delayed_until,
        expires=expires,
        conn=connection(using),
    )


__all__ = ["bus", "connection", "database_alias", "dsn", "post"]
