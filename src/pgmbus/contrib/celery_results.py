"""Celery's results on the broker's database: ``result_backend = "pgmbus://..."``.

A key-value result backend on the table ``mbus.celery_results``: task results, saved groups
and chord counters (chords count their finished parts with one atomic increment). A stored
result notifies (``NOTIFY``) the sessions waiting for one, so ``AsyncResult.get()`` returns
when its result is stored instead of at the next half-second poll. Results expire after
``result_expires`` (Celery's setting, one day by default): an expired row is never read, and
Celery's ``celery.backend_cleanup`` task (run daily by ``celery beat``) deletes them.

The URL is the broker's (``pgmbus://user:password@host:port/database``; a bare
``pgmbus://`` follows the DSN rule). Importing ``pgmbus.contrib.kombu_transport`` (or
``pgmbus.contrib.celery``) registers the ``pgmbus`` scheme with Celery.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import psycopg
from celery import states
from celery.backends.base import KeyValueStoreBackend
from celery.exceptions import TimeoutError as CeleryTimeout
from kombu.utils.encoding import bytes_to_str, ensure_bytes
from kombu.utils.url import maybe_sanitize_url

from pgmbus.contrib.kombu_transport import dsn_from_url
from pgmbus.data.celery import CELERY
from pgmbus.dsn import resolve_dsn

CHANNEL = "pgmbus_celery_results"  # the NOTIFY channel of stored results (result_listen)


class _Connections(dict[tuple[str, int], psycopg.Connection[Any]]):
    """One thread's connections, closed when the thread (its local storage) goes."""

    def close(self) -> None:
        for conn in self.values():
            conn.close()
        self.clear()

    def __del__(self) -> None:
        self.close()


class PgmbusBackend(KeyValueStoreBackend):  # type: ignore[misc]
    """Celery's result backend on ``mbus.celery_results``."""

    implements_incr = True
    supports_autoexpire = True
    supports_native_join = True
    # longest wait between two looks of a waiting get(): a lost notification costs no more
    longest_wait = 1.0

    def __init__(self, url: str | None = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, url=url, **kwargs)
        self.dsn = resolve_dsn(dsn_from_url(url))
        self._local = threading.local()

    # --- connections: one per thread and process (a forked worker makes its own) ------------

    def _conn(self, what: str) -> psycopg.Connection[Any]:
        conns = self._local.__dict__.setdefault("conns", _Connections())
        key = (what, os.getpid())
        conn: psycopg.Connection[Any] | None = conns.get(key)
        if conn is None or conn.closed or conn.broken:
            conn = psycopg.connect(self.dsn, autocommit=True)
            if what == "listen":
                conn.execute(CELERY["result_listen"])
            conns[key] = conn
        return conn

    def close(self) -> None:
        """Close this thread's connections (a thread's are closed when it ends, too)."""
        self._local.__dict__.pop("conns", _Connections()).close()

    def _run(self, name: str, params: dict[str, Any]) -> list[Any]:
        try:
            cur = self._conn("store").execute(CELERY[name], params)
        except psycopg.OperationalError:
            # a connection lost (server restart, terminated backend): once more on a new one
            cur = self._conn("store").execute(CELERY[name], params)
        return cur.fetchall() if cur.description is not None else []

    def _expires(self) -> float | None:
        return float(self.expires) if self.expires else None

    # --- the key-value store ---------------------------------------------------------------

    def get(self, key: Any) -> bytes | None:
        rows = self._run("result_get", {"keys": [bytes_to_str(key)]})
        return bytes(rows[0][1]) if rows else None

    def mget(self, keys: Any) -> list[bytes | None]:
        wanted = [bytes_to_str(k) for k in keys]
        found = {k: bytes(v) for k, v in self._run("result_get", {"keys": wanted})}
        return [found.get(k) for k in wanted]

    def set(self, key: Any, value: Any) -> None:
        params = {
            "key": bytes_to_str(key),
            "value": ensure_bytes(value),
            "expires": self._expires(),
            "channel": CHANNEL,
        }
        self._run("result_set", params)

    def delete(self, key: Any) -> None:
        self._run("result_delete", {"key": bytes_to_str(key)})

    def incr(self, key: Any) -> int:
        [(count,)] = self._run(
            "result_incr", {"key": bytes_to_str(key), "expires": self._expires()}
        )
        return int(count)

    def expire(self, key: Any, value: Any) -> None:
        if value:
            self._run("result_expire", {"key": bytes_to_str(key), "expires": float(value)})

    def cleanup(self) -> None:
        """Delete the expired results (Celery's ``backend_cleanup`` task calls it)."""
        self._run("result_cleanup", {})

    # --- waiting -----------------------------------------------------------------------------

    def wait_for(
        self,
        task_id: str,
        timeout: float | None = None,
        interval: float = 0.5,
        no_ack: bool = True,
        on_interval: Any = None,
    ) -> Any:
        """Wait for the task's result: woken by the NOTIFY of its store, not by a poll."""
        self._ensure_not_eager()
        listener = self._conn("listen")  # listening before the look: no store slips between
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            meta = self.get_task_meta(task_id)
            if meta["status"] in states.READY_STATES:
                return meta
            if on_interval:
                on_interval()
            wait = self.longest_wait
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    raise CeleryTimeout("The operation timed out.")
            for _note in listener.notifies(timeout=wait, stop_after=1):
                pass

    def as_uri(self, include_password: bool = False) -> str:
        url = self.url or "pgmbus://"
        return str(url if include_password else maybe_sanitize_url(url))
