"""One stream handler: a StreamWorker per slot in its own thread, restarted after an error."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import psycopg

from pgmbus.handlers import StreamHandler
from pgmbus.reconnect import Backoff, is_transient
from pgmbus.streams.client import Event
from pgmbus.streams.worker import StreamWorker, WorkerStats


class StreamLoop:
    """Run one :class:`~pgmbus.handlers.StreamHandler` on the existing ``StreamWorker``.

    Each slot (or the one unslotted loop) runs in a daemon thread; a batch in progress when
    ``stop`` is set finishes (its transaction commits) before the thread returns. A batch cut
    short by the process's exit is rolled back by the server, so each event's database effects
    still happen exactly once.
    """

    def __init__(self, dsn: str, spec: StreamHandler) -> None:
        self.dsn = dsn
        self.spec = spec
        self.log = logging.getLogger(f"pgmbus.handler.{spec.name}")
        self.workers = [
            StreamWorker(
                dsn,
                spec.group,
                self._logged,
                slot=slot,
                batch=spec.max_events,
                subscriptions=spec.subscriptions,
            )
            for slot in (spec.slots if spec.slots is not None else (None,))
        ]
        self._failing: set[int] = set()

    @property
    def stats(self) -> WorkerStats:
        """The workers' stats added up."""
        total = WorkerStats()
        for w in self.workers:
            total.batches += w.stats.batches
            total.handled += w.stats.handled
            total.retried += w.stats.retried
            total.dead += w.stats.dead
            total.reconnects += w.stats.reconnects
        return total

    @property
    def healthy(self) -> bool:
        """False while a slot's loop is down (waiting to restart after an error)."""
        return not self._failing

    def _logged(self, conn: psycopg.Connection[Any], event: Event) -> None:
        try:
            self.spec.fn(conn, event)
        except Exception:
            self.log.warning(
                "event %s of group %s failed",
                event.id,
                self.spec.group,
                exc_info=True,
                extra={"handler": self.spec.name, "group": self.spec.group, "event": event.id},
            )
            raise

    def start(
        self, stop: threading.Event, on_fatal: Callable[[BaseException], None]
    ) -> list[threading.Thread]:
        """Start one thread per worker; they return once ``stop`` is set.

        A database that cannot be reached costs a restart with backoff; any other error (a
        missing group, a bug) ends the thread and is handed to ``on_fatal``.
        """
        threads = [
            threading.Thread(
                target=self._run,
                args=(i, stop, on_fatal),
                name=f"pgmbus:{self.spec.name}:{i}",
                daemon=True,
            )
            for i in range(len(self.workers))
        ]
        for t in threads:
            t.start()
        return threads

    def _run(
        self, index: int, stop: threading.Event, on_fatal: Callable[[BaseException], None]
    ) -> None:
        worker = self.workers[index]
        backoff = Backoff()
        while not stop.is_set():
            try:
                self._failing.discard(index)  # (re)starting; marked again if it fails again
                # the worker itself reconnects (with this backoff) after transient errors
                worker.run(stop=stop.is_set, idle_wait=self.spec.idle_wait, backoff=backoff)
            except Exception as exc:
                if is_transient(exc):  # raised outside the worker's own retry loop
                    self._failing.add(index)
                    wait = backoff.next()
                    self.log.warning(
                        "stream loop of group %s lost the database, restarting in %.2fs: %s",
                        self.spec.group,
                        wait,
                        exc,
                    )
                    stop.wait(wait)
                    continue
                self._failing.add(index)
                self.log.exception("stream loop of group %s failed", self.spec.group)
                on_fatal(exc)
                return

    def drain(self) -> None:
        """Handle every event due now (batches and retries) in the calling thread, then return."""
        for worker in self.workers:
            with psycopg.connect(self.dsn) as conn:
                while worker.step(conn):
                    pass
