"""Exchange bindings shared by every process of the Kombu transport (``mbus.kombu_bindings``).

Kombu's virtual transport keeps bindings in each process, which is enough when the process
that publishes declared the queue itself (Celery's task queues). Remote control and events
are not so: ``celery inspect`` broadcasts to the workers' queues (a fanout exchange), a
worker replies to the queue the client bound, and a worker's events go to the queues
``celery events`` and Flower bound (a topic exchange). So the transport stores every binding
in the database, and a publisher looks its exchange up there: a fanout at each broadcast
(rare; it must reach a worker that just started), other exchanges from a copy at most
``max_age`` seconds old, looked up again when it routes a message nowhere.
"""

from __future__ import annotations

import threading
from time import monotonic
from typing import Any

from pgmbus.data.celery import CELERY
from pgmbus.queues import Bus

DEFAULT_MAX_AGE = 1.0  # seconds a copy of an exchange's bindings is used


class Bindings:
    """The shared binding tables, with a short-lived copy per exchange."""

    def __init__(self, bus: Bus, max_age: float = DEFAULT_MAX_AGE) -> None:
        self.bus = bus
        self.max_age = max_age
        self._tables: dict[str, tuple[float, list[tuple[str, str | None, str]]]] = {}
        self._ttl: dict[str, float] = {}  # queue -> its message TTL, as last read
        self._lock = threading.Lock()

    def bind(
        self,
        exchange: str,
        routing_key: str,
        pattern: str | None,
        queue: str,
        message_ttl: float | None,
    ) -> None:
        params = {
            "exchange": exchange,
            "queue": queue,
            "routing_key": routing_key,
            "pattern": pattern,
            "message_ttl": message_ttl,
        }
        with self.bus.pool.connection() as conn:
            conn.execute(CELERY["bind"], params)
        self.forget(exchange)

    def unbind(self, exchange: str, routing_key: str, queue: str) -> None:
        params = {"exchange": exchange, "queue": queue, "routing_key": routing_key}
        with self.bus.pool.connection() as conn:
            conn.execute(CELERY["unbind"], params)
        self.forget(exchange)

    def unbind_queue(self, queue: str) -> None:
        with self.bus.pool.connection() as conn:
            conn.execute(CELERY["unbind_queue"], {"queue": queue})
        with self._lock:
            self._tables.clear()

    def forget(self, exchange: str) -> None:
        with self._lock:
            self._tables.pop(exchange, None)

    def table(self, exchange: str, *, fresh: bool = False) -> list[tuple[str, str | None, str]]:
        """The ``(routing_key, pattern, queue)`` bindings of ``exchange``, Kombu's table (a
        direct exchange has no pattern)."""
        now = monotonic()
        with self._lock:
            kept = self._tables.get(exchange)
        if kept is not None and not fresh and now - kept[0] < self.max_age:
            return kept[1]
        with self.bus.pool.connection() as conn:
            rows: list[Any] = conn.execute(CELERY["bindings"], {"exchange": exchange}).fetchall()
        table = [(key, pattern, queue) for key, pattern, queue, _ttl in rows]
        with self._lock:
            self._tables[exchange] = (now, table)
            for _key, _pattern, queue, ttl in rows:
                if ttl is None:
                    self._ttl.pop(queue, None)
                else:
                    self._ttl[queue] = float(ttl)
        return table

    def message_ttl(self, queue: str) -> float | None:
        """The message TTL of ``queue`` (seconds), as the last lookup found it."""
        with self._lock:
            return self._ttl.get(queue)
