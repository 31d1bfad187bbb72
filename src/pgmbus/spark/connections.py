"""ADBC connections kept open in a Spark Python worker between the tasks it runs.

Opening an ADBC PostgreSQL connection costs ~100 ms (the driver loads the server's type
catalog), more than reading a small micro-batch. Spark reuses its Python workers for task after
task, so each worker keeps one idle connection per DSN: a read takes it (or opens one) and gives
it back only when it read to the end without error; anything else closes it. Kept connections
are in autocommit mode, so an idle one holds no transaction (and no snapshot).
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from typing import Any

_IDLE: dict[str, Any] = {}
_LOCK = threading.Lock()
_MAX_IDLE = 4  # DSNs with a kept connection (a worker usually reads one database)


def open_connection(dsn: str) -> Any:
    """A new ADBC connection (autocommit, session time zone UTC)."""
    import adbc_driver_postgresql.dbapi as adbc

    conn = adbc.connect(dsn, autocommit=True)
    with conn.cursor() as cur:
        cur.execute("SET TimeZone = 'UTC'")  # for time filters given as naive timestamps
    return conn


def take(dsn: str) -> tuple[Any, bool]:
    """A connection for one read, and whether it was kept from an earlier one."""
    with _LOCK:
        conn = _IDLE.pop(dsn, None)
    if conn is not None:
        return conn, True
    return open_connection(dsn), False


def give_back(dsn: str, conn: Any) -> None:
    """Keep a connection whose read ended cleanly for the next read in this process."""
    evicted = []
    with _LOCK:
        if dsn in _IDLE:
            evicted.append(conn)
        else:
            while len(_IDLE) >= _MAX_IDLE:
                evicted.append(_IDLE.pop(next(iter(_IDLE))))
            _IDLE[dsn] = conn
    for old in evicted:
        discard(old)


def discard(conn: Any) -> None:
    """Close a connection, ignoring errors (it may be broken already)."""
    with contextlib.suppress(Exception):
        conn.close()


def is_connection_error(exc: BaseException) -> bool:
    """Whether an error says the connection is unusable (not that the query is wrong)."""
    sqlstate = getattr(exc, "sqlstate", None)
    return sqlstate is None or str(sqlstate).startswith(("08", "57P"))


@atexit.register
def close_all() -> None:
    """Close every kept connection (at exit, before the ADBC modules are torn down)."""
    with _LOCK:
        kept = list(_IDLE.values())
        _IDLE.clear()
    for conn in kept:
        discard(conn)
