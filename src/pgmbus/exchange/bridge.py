"""The mover of ``pgmbus bridge``: batched, exactly-once transfers along the routes of a database.

Queue routes and topic routes (``mbus.exchange_take_topic``/``exchange_receive_topic``: the
group ``xt_<route>`` is moved past the batch in the source transaction) move the same way.
One transfer of a route: in a transaction on the source, ``mbus.exchange_take`` consumes a batch
from the route's consumer; in a transaction on the destination, ``mbus.exchange_receive`` posts
it and records its iids; the destination commits, then the source. A crash anywhere before the
destination's commit leaves both sides as they were; a crash between the two commits leaves the
batch in the source, and the destination skips its iids when it comes again. One mover holds a
route at a time (a session advisory lock on the source), so a route keeps its queue's order.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import psycopg

from pgmbus.errors import translate
from pgmbus.sqlfiles import load_queries

log = logging.getLogger("pgmbus.exchange")
_Q = load_queries("exchange.sql")


@dataclass(frozen=True)
class Route:
    """A route as the source declares it (the conninfo holds no password)."""

    name: str
    link: str
    src_queue: str  # the source topic of a topic route
    dst_queue: str  # the destination topic of a topic route
    conninfo: str
    kind: str = "queue"  # or "topic" (mbus.create_topic_route)


@dataclass
class Transfer:
    """What the transfers of a mover did so far."""

    batches: int = 0
    taken: int = 0
    accepted: int = 0
    duplicate: int = 0
    looped: int = 0
    errors: int = 0


class Bridge:
    """Move the messages of a source database's routes to the linked databases.

    Parameters
    ----------
    dsn:
        The source database (where the routes are declared).
    routes:
        Run only these routes (default: every route; the list is read again every
        ``refresh`` seconds, so new routes are picked up).
    batch:
        The most messages per transfer.
    poll:
        The longest wait when no route had anything to move: an idle mover sleeps on the
        source queues' wake-ups (``mbus.await_queue``), so a post ends the wait at once; the
        poll bounds it when a wake-up is missed.
    refresh:
        Seconds between two readings of the route list.
    """

    def __init__(
        self,
        dsn: str,
        *,
        routes: list[str] | None = None,
        batch: int = 500,
        poll: float = 1.0,
        refresh: float = 5.0,
    ) -> None:
        if batch < 1:
            raise ValueError("batch must be >= 1")
        self.dsn = dsn
        self.only = set(routes) if routes else None
        self.batch = batch
        self.poll = poll
        self.refresh = refresh
        self.stats = Transfer()
        self._src: psycopg.Connection[Any] | None = None
        self._dst: dict[str, psycopg.Connection[Any]] = {}
        self._routes: list[Route] = []
        self._held: set[str] = set()
        self._listener: psycopg.Connection[Any] | None = None
        self._waiting: set[str] = set()  # source queues the listener is registered on
        self._read_at = float("-inf")

    # --- connections ------------------------------------------------------------------------
    def _source(self) -> psycopg.Connection[Any]:
        if self._src is None or self._src.closed:
            self._held.clear()
            self._src = psycopg.connect(self.dsn, application_name="pgmbus bridge")
            self._src.execute(_Q["durable_commits"])
            self._src.commit()
        return self._src

    def _destination(self, route: Route) -> psycopg.Connection[Any]:
        conn = self._dst.get(route.conninfo)  # by address: mbus.alter_link moves a link
        if conn is None or conn.closed:
            conn = psycopg.connect(route.conninfo, application_name="pgmbus bridge")
            conn.execute(_Q["durable_commits"])
            conn.commit()
            self._dst[route.conninfo] = conn
        return conn

    def close(self) -> None:
        """Close every connection (the source's close releases the route locks)."""
        for conn in [self._src, self._listener, *self._dst.values()]:
            if conn is not None:
                conn.close()
        self._src = self._listener = None
        self._dst.clear()
        self._held.clear()
        self._waiting.clear()

    # --- wake-ups ---------------------------------------------------------------------------
    def _listen(self, queues: set[str]) -> bool:
        """Register for the posts to ``queues``; return whether any registration is new."""
        if self._listener is None or self._listener.closed:
            self._waiting.clear()
            self._listener = psycopg.connect(
                self.dsn, autocommit=True, application_name="pgmbus bridge"
            )
        new = queues - self._waiting
        for queue in sorted(new):
            self._listener.execute(_Q["await_queue"], {"queue": queue})
            self._waiting.add(queue)
        return bool(new)

    def _unlisten(self) -> None:
        """Stop the wake-ups while busy: posts notify only while somebody waits."""
        if self._listener is not None and not self._listener.closed:
            for queue in sorted(self._waiting):
                self._listener.execute(_Q["await_done"], {"queue": queue})
        self._waiting.clear()

    def _sleep(self, stop: threading.Event) -> None:
        """Wait for a post to a source queue, at most ``poll`` seconds."""
        queues = {r.src_queue for r in self._routes if r.name in self._held and r.kind == "queue"}
        if not queues or self._listener is None:
            stop.wait(self.poll)
            return
        deadline = time.monotonic() + self.poll
        while not stop.is_set() and (left := deadline - time.monotonic()) > 0:
            for _note in self._listener.notifies(timeout=min(left, 0.5), stop_after=1):
                return

    # --- routes -----------------------------------------------------------------------------
    def routes(self) -> list[Route]:
        """The routes this mover holds now, read again every ``refresh`` seconds."""
        if time.monotonic() - self._read_at >= self.refresh:
            src = self._source()
            rows = src.execute(_Q["routes"]).fetchall()
            src.commit()
            self._routes = [Route(*row) for row in rows if self.only is None or row[0] in self.only]
            self._read_at = time.monotonic()
        held: list[Route] = []
        for route in self._routes:
            if route.name not in self._held:
                src = self._source()
                got = src.execute(_Q["try_route_lock"], {"route": route.name}).fetchone()
                src.commit()
                if not (got and got[0]):
                    continue  # another mover runs this route
                self._held.add(route.name)
            held.append(route)
        return held

    # --- one transfer -----------------------------------------------------------------------
    def transfer(self, route: Route) -> int:
        """Move one batch of ``route``; return how many messages (events) left the source."""
        src = self._source()
        try:
            if route.kind == "topic":
                row = src.execute(
                    _Q["take_topic"], {"route": route.name, "amt": self.batch}
                ).fetchone()
                read: dict[str, Any] = json.loads(str(row[0])) if row else {"read": 0}
                if not read["read"]:
                    src.rollback()
                    return 0
                if not read["events"]:  # all outside the key range: just move the group on
                    src.commit()
                    return int(read["read"])
                receive, params = (
                    "receive_topic",
                    {
                        "topic": route.dst_queue,
                        "events": json.dumps(read["events"]),
                    },
                )
            else:
                row = src.execute(_Q["take"], {"route": route.name, "amt": self.batch}).fetchone()
                messages = str(row[0]) if row else "[]"
                if messages == "[]":
                    src.rollback()
                    return 0
                receive, params = "receive", {"qname": route.dst_queue, "messages": messages}
            dst = self._destination(route)
            try:
                got = dst.execute(_Q[receive], params).fetchone()
                dst.commit()
            except BaseException:
                if not dst.closed:
                    dst.rollback()
                raise
            self._between_commits()
            src.commit()
        except BaseException:
            if not src.closed:
                src.rollback()
            raise
        counts = _counts(got)
        taken = counts["accepted"] + counts["duplicate"] + counts["looped"]
        self.stats.batches += 1
        self.stats.taken += taken
        self.stats.accepted += counts["accepted"]
        self.stats.duplicate += counts["duplicate"]
        self.stats.looped += counts["looped"]
        return taken

    def _between_commits(self) -> None:
        """Called after the destination's commit, before the source's (a seam for fault tests)."""

    def drain(self) -> int:
        """Move batches until no route has anything ready; return the messages moved."""
        moved = 0
        while True:
            round_moved = sum(self.transfer(route) for route in self.routes())
            moved += round_moved
            if round_moved == 0:
                return moved

    def _round(self) -> int:
        """One transfer per route; a route whose destination refuses is logged and skipped."""
        moved = 0
        for route in self.routes():
            try:
                moved += self.transfer(route)
            except (psycopg.OperationalError, psycopg.InterfaceError):
                raise
            except psycopg.Error as exc:
                self.stats.errors += 1
                log.warning("route %s: %s", route.name, translate(exc))
        return moved

    # --- the loop ---------------------------------------------------------------------------
    def run(self, stop: threading.Event | None = None) -> Transfer:
        """Move until ``stop`` is set; connection failures are logged and retried."""
        stop = stop or threading.Event()
        backoff = 0.0
        while not stop.is_set():
            try:
                moved = self._round()
                backoff = 0.0
                if moved:
                    self._unlisten()
                else:
                    queues = {
                        r.src_queue
                        for r in self._routes
                        if r.name in self._held and r.kind == "queue"
                    }
                    # registered now: look once more before sleeping, so no post slips between
                    if not self._listen(queues):
                        self._sleep(stop)
            except psycopg.Error as exc:
                self.stats.errors += 1
                backoff = min(5.0, max(0.2, backoff * 2))
                log.warning("transfer failed (retrying in %.1fs): %s", backoff, translate(exc))
                if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
                    self.close()
                stop.wait(backoff)
        self.close()
        return self.stats


def _counts(row: tuple[Any, ...] | None) -> dict[str, int]:
    value = json.loads(str(row[0])) if row else {}
    return {k: int(value.get(k, 0)) for k in ("accepted", "duplicate", "looped")}
