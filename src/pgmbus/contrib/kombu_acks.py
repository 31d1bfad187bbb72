"""Batched acks of the Kombu transport: one statement acks what a worker finished meanwhile.

Kombu acks one message per ``basic_ack`` call, and Celery makes that call from its pool's
threads; one statement (and one commit) per message was most of the transport's cost. The
buffer collects the acked leases and its thread acks them together, ``delay`` seconds after
the first one came (not the worker's loop: it waits for no ack's round trip). Until then a
message stays held (its lease kept), so a worker that dies before the flush has acked
nothing: those messages are delivered again when their lease ends (at least once, never
lost).
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from typing import Any, Protocol

import psycopg

from pgmbus.data.celery import CELERY
from pgmbus.errors import PgmbusError, StaleLease, translating
from pgmbus.queues import Bus, Message

log = logging.getLogger("pgmbus.kombu")

DEFAULT_DELAY = 0.05  # seconds an ack may wait for others to share its statement


class Keeper(Protocol):
    """What the buffer needs of the lease keeper."""

    turn: threading.Lock  # held while acking: no extension of the keeper's crosses an ack

    def release(self, token: Any) -> Message | None: ...

    def lost_lease(self, message: Message) -> None: ...


class AckBuffer:
    """Acked leases not yet acked in the database, flushed in one statement per queue."""

    def __init__(self, bus: Bus, keeper: Keeper, delay: float = DEFAULT_DELAY) -> None:
        self.bus = bus
        self.keeper = keeper
        self.delay = delay
        self._pending: list[Message] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pgmbus-acks", daemon=True)
        self._thread.start()

    def add(self, message: Message) -> None:
        """Ack ``message`` at the next flush (it stays held until then)."""
        with self._lock:
            self._pending.append(message)
        self._wake.set()

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self) -> None:
        """Ack every message added so far: one statement per queue."""
        with self.keeper.turn:
            with self._lock:
                taken, self._pending = self._pending, []
            by_queue: dict[str, list[Message]] = defaultdict(list)
            for message in taken:
                if self.keeper.release(message.lease_token) is not None:
                    by_queue[message.queue].append(message)
            for queue, messages in by_queue.items():
                self._ack(queue, messages)

    def _ack(self, queue: str, messages: list[Message]) -> None:
        if len(messages) > 1:
            tokens = [m.lease_token for m in messages]
            try:
                with self.bus.pool.connection() as conn, translating():
                    conn.execute(CELERY["ack_many"], {"queue": queue, "tokens": tokens})
                return
            except StaleLease:
                pass  # a lease was lost: one by one, to tell which
        for message in messages:
            try:
                self.bus.ack(message)
            except StaleLease:
                self.keeper.lost_lease(message)
            except (PgmbusError, psycopg.Error, OSError) as exc:
                log.warning("%s comes back when its lease ends: %s", message.iid, exc)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            if self._stop.wait(self.delay):
                return
            try:
                self.flush()
            except (PgmbusError, psycopg.Error, OSError) as exc:
                log.warning("acks failed; they come back when their lease ends: %s", exc)

    def stop(self) -> None:
        """Flush what is pending, then stop the thread."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=5)
        self.flush()
