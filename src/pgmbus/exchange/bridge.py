"""The mover of ``pgmbus bridge``: batched, exactly-once transfers along the routes of a database.

Queue routes and topic routes (``mbus.exchange_take_topic``/``exchange_receive_topic``: the
group ``xt_<route>`` is moved past the batch in the source transaction) move the same way.
One transfer of a route: in a transaction on the source, ``mbus.exchange_take`` consumes a batch
from the route's consumer; in a transaction on the destination, ``mbus.exchange_receive`` posts
it and records its iids; the destination commits, then the source. A crash anywhere before the
destination's commit leaves both sides as they were; a crash between the two commits leaves the
batch in the source, and the destination skips its iids when it comes again. One mover holds a
route at a time (a session advisory lock on the source), so a route keeps its queue's order.

Routes are isolated from each other: a route whose transfer fails (its destination is down or
refuses the batch) is logged by name and paused with a backoff of its own, while the other
routes go on. Only a failure of the source itself (every route's side) pauses the whole mover.
A route whose batch the destination refuses for its data (a data exception, a violated
constraint, a bad payload) is then moved one message at a time; the message refused
``POISON_ATTEMPTS`` times in a row is buried with the destination's error as its reason, and the
route goes on: a queue route's message in the source's dead-message queue (for the route's
consumer; ``dmq_replay`` posts it again), a topic route's event in the dead letters of its group
``xt_<route>`` (``mbus.replay_dead_letter`` gives it back to the route). ``--once``
(:meth:`Bridge.drain`) does the same without waiting between attempts.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgmbus.data.exchange import EXCHANGE as _Q
from pgmbus.errors import PgmbusError, translate

log = logging.getLogger("pgmbus.exchange")

# A destination that does not answer must not hold the mover (and every other route) for the
# kernel's TCP timeouts: connecting gives up after 10 s, and a session whose peer has vanished
# (a network partition mid-statement) is found dead by TCP keepalives within about 25 s, unless
# the link's conninfo sets these itself.
CONNECT_TIMEOUT_S = 10
_LINK_DEFAULTS = {
    "connect_timeout": CONNECT_TIMEOUT_S,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}
BACKOFF_MIN_S = 0.2
BACKOFF_MAX_S = 5.0
POISON_ATTEMPTS = 3


def _refuses_the_data(error: PgmbusError) -> bool:
    """Whether the destination refused what a message holds (not the route: a missing queue, a
    lost connection, a permission), so that another message may well pass."""
    state = error.sqlstate or ""
    return state.startswith(("22", "23")) or state == "MB005"


def _backoff(failures: int) -> float:
    """The pause after ``failures`` failures in a row: doubling from 0.2 s, at most 5 s."""
    return min(BACKOFF_MAX_S, BACKOFF_MIN_S * 2.0 ** min(failures - 1, 16))


class RoutesFailed(PgmbusError):
    """Some routes could not move their messages (the others moved theirs).

    Attributes
    ----------
    failed:
        The route names, each with the error that stopped it.
    moved:
        The messages the other routes moved.
    """

    def __init__(self, failed: dict[str, str], moved: int) -> None:
        names = ", ".join(f"{name} ({why})" for name, why in sorted(failed.items()))
        super().__init__(f"{len(failed)} route(s) failed after moving {moved} message(s): {names}")
        self.failed = dict(failed)
        self.moved = moved


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
    buried: int = 0  # messages a destination kept refusing, sent to the source's dmq


@dataclass
class _Failing:
    """A route whose transfers fail: how many times in a row, and when to try again."""

    failures: int
    retry_at: float
    error: str


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
    timeout:
        Longest a statement on a destination may run (its session's ``statement_timeout``):
        a destination stuck behind a lock fails that route's transfer, not the mover.
    """

    def __init__(
        self,
        dsn: str,
        *,
        routes: list[str] | None = None,
        batch: int = 500,
        poll: float = 1.0,
        refresh: float = 5.0,
        timeout: float = 30.0,
    ) -> None:
        if batch < 1:
            raise ValueError("batch must be >= 1")
        if timeout <= 0:
            raise ValueError("timeout must be > 0")
        self.timeout = timeout
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
        self.failing: dict[str, _Failing] = {}
        self._probing: dict[str, int] = {}  # route -> single-message transfers left
        self._refused: dict[str, int] = {}  # route -> refusals in a row of its next message

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
            conn = psycopg.connect(
                make_conninfo(route.conninfo, **_link_defaults(route.conninfo)),
                application_name="pgmbus bridge",
            )
            conn.execute(_Q["durable_commits"])
            conn.execute(_Q["statement_timeout"], {"ms": str(max(1, round(self.timeout * 1000)))})
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

    def _sleep(self, stop: threading.Event, retry: float | None = None) -> None:
        """Wait for a post to a source queue, at most ``poll`` seconds (or until ``retry``)."""
        wait = self.poll if retry is None else min(self.poll, retry)
        queues = {r.src_queue for r in self._routes if r.name in self._held and r.kind == "queue"}
        if not queues or self._listener is None:
            stop.wait(wait)
            return
        deadline = time.monotonic() + wait
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
    def transfer(self, route: Route, amt: int | None = None) -> int:
        """Move one batch of ``route`` (``amt`` messages at most, default ``batch``); return how
        many messages (events) left the source."""
        amt = self.batch if amt is None else amt
        src = self._source()
        try:
            if route.kind == "topic":
                row = src.execute(_Q["take_topic"], {"route": route.name, "amt": amt}).fetchone()
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
                row = src.execute(_Q["take"], {"route": route.name, "amt": amt}).fetchone()
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
        """Move batches until no route has anything ready; return the messages moved.

        Every route moves what it can: a route that fails is left out of the later rounds and,
        once the others are done, ``RoutesFailed`` names each failed route (with ``moved``).
        A batch the destination refuses for its data is moved one message at a time, and the
        message refused ``POISON_ATTEMPTS`` times in a row is buried as by :meth:`run` (the
        source's dmq, a topic route's dead letters; counted in ``stats.buried``), at once: the
        route then goes on.
        """
        moved = 0
        failed: dict[str, str] = {}
        while True:
            round_moved = 0
            refused = False  # a route is finding or burying a refused message: go round again
            for route in self.routes():
                if route.name in failed:
                    continue
                amt = 1 if route.name in self._probing else self.batch
                buried = self.stats.buried
                try:
                    round_moved += self.transfer(route, amt)
                except psycopg.Error as exc:
                    error = self._route_failed(route, exc, amt)
                    if self.stats.buried > buried or (
                        self._refused.get(route.name, 0) <= POISON_ATTEMPTS
                        and (route.name in self._probing or route.name in self._refused)
                    ):
                        refused = True
                    else:
                        failed[route.name] = str(error)
                    continue
                self._moved(route)
            moved += round_moved
            if round_moved == 0 and not refused:
                break
        self.failing.clear()  # drain waits out no backoff
        if failed:
            raise RoutesFailed(failed, moved)
        return moved

    def _route_failed(self, route: Route, exc: psycopg.Error, amt: int = 0) -> PgmbusError:
        """Account for a failed transfer of ``route``; re-raise when the source itself failed.

        ``amt`` is the batch size the transfer asked for (0: do not look for a refused message).

        A lost source connection is every route's failure (the caller backs off as a whole);
        anything else (the destination down, refusing, or this route's own query failing)
        pauses this route alone.
        """
        if self._src is None or self._src.closed:
            raise exc
        error = translate(exc)
        self.stats.errors += 1
        dst = self._dst.get(route.conninfo)
        if dst is not None and (dst.closed or dst.broken):
            dst.close()
            del self._dst[route.conninfo]  # reconnect at the route's next try
        before = self.failing.get(route.name)
        failures = 1 if before is None else before.failures + 1
        pause = _backoff(failures)
        self.failing[route.name] = _Failing(failures, time.monotonic() + pause, str(error))
        log.warning(
            "route %s: transfer failed %d time(s) in a row (retrying in %.1fs): %s",
            route.name,
            failures,
            pause,
            error,
        )
        if amt and _refuses_the_data(error):
            self._refused_data(route, error, amt)
        else:
            self._refused.pop(route.name, None)
        return error

    def _refused_data(self, route: Route, error: PgmbusError, amt: int) -> None:
        """The destination refused a message's data: find which one, then bury it."""
        if amt > 1:
            # the refused message is among the next ``amt``: move them one by one
            self._probing[route.name] = amt
            log.warning(
                "route %s: moving one message at a time to find the refused one", route.name
            )
            return
        refusals = self._refused.get(route.name, 0) + 1
        self._refused[route.name] = refusals
        if refusals < POISON_ATTEMPTS:
            return
        try:
            self._bury_next(route, error, refusals)
        except psycopg.Error as exc:
            if self._src is None or self._src.closed:
                raise
            log.error(
                "route %s: could not bury the refused message: %s", route.name, translate(exc)
            )
            return  # tried again at the next refusal
        self._refused.pop(route.name, None)
        self.failing.pop(route.name, None)  # the route goes on at once

    def _bury_next(self, route: Route, error: PgmbusError, refusals: int) -> None:
        """Send the route's next message to the source's dmq (its consumer, the reason), or a
        topic route's next event to its group's dead letters."""
        reason = f"refused {refusals} times by link {route.link} (route {route.name}): {error}"
        if route.kind == "topic":
            self._bury_next_event(route, reason, refusals)
            return
        src = self._source()
        try:
            row = src.execute(_Q["take"], {"route": route.name, "amt": 1}).fetchone()
            messages = str(row[0]) if row else "[]"
            if messages == "[]":
                src.rollback()
                return
            src.execute(
                _Q["bury_taken"],
                {
                    "queue": route.src_queue,
                    "consumer": f"xr_{route.name}",
                    "messages": messages,
                    "reason": reason,
                    "attempts": refusals,
                },
            )
            src.commit()
        except BaseException:
            if not src.closed:
                src.rollback()
            raise
        self.stats.buried += 1
        iid = json.loads(messages)[0].get("iid")
        log.error("route %s: message %s buried in the dmq: %s", route.name, iid, reason)

    def _bury_next_event(self, route: Route, reason: str, refusals: int) -> None:
        """Send a topic route's next event to the dead letters of its group ``xt_<route>``."""
        src = self._source()
        try:
            row = src.execute(
                _Q["bury_topic"], {"route": route.name, "reason": reason, "attempts": refusals}
            ).fetchone()
            src.commit()
        except BaseException:
            if not src.closed:
                src.rollback()
            raise
        if row is None or row[0] is None:
            return
        self.stats.buried += 1
        log.error(
            "route %s: event %s buried in the dead letters of group xt_%s: %s",
            route.name,
            row[0],
            route.name,
            reason,
        )

    def _moved(self, route: Route) -> None:
        """A transfer of ``route`` went through: its refusal count and probing move on."""
        self._refused.pop(route.name, None)
        if route.name in self._probing:
            self._probing[route.name] -= 1
            if self._probing[route.name] <= 0:
                del self._probing[route.name]

    def _round(self) -> int:
        """One transfer per route; a failing route waits out its own backoff, the others go on."""
        moved = 0
        now = time.monotonic()
        for route in self.routes():
            failing = self.failing.get(route.name)
            if failing is not None and now < failing.retry_at:
                continue
            amt = 1 if route.name in self._probing else self.batch
            try:
                moved += self.transfer(route, amt)
            except psycopg.Error as exc:
                self._route_failed(route, exc, amt)
                continue
            self._moved(route)
            if failing is not None:
                del self.failing[route.name]
                log.info("route %s: moving again after %d failure(s)", route.name, failing.failures)
        return moved

    def _next_retry(self) -> float | None:
        """Seconds until the first failing route may be tried again (None: no route fails)."""
        if not self.failing:
            return None
        return max(0.0, min(f.retry_at for f in self.failing.values()) - time.monotonic())

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
                        self._sleep(stop, self._next_retry())
            except psycopg.Error as exc:
                self.stats.errors += 1
                backoff = min(BACKOFF_MAX_S, max(BACKOFF_MIN_S, backoff * 2))
                log.warning(
                    "source %s failed (retrying in %.1fs): %s",
                    _where(self.dsn),
                    backoff,
                    translate(exc),
                )
                if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
                    self.close()
                stop.wait(backoff)
        self.close()
        return self.stats


def _counts(row: tuple[Any, ...] | None) -> dict[str, int]:
    value = json.loads(str(row[0])) if row else {}
    return {k: int(value.get(k, 0)) for k in ("accepted", "duplicate", "looped")}


def _link_defaults(conninfo: str) -> dict[str, int]:
    """The bounds on time (``_LINK_DEFAULTS``) the conninfo and the environment do not set."""
    try:
        given = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return {}  # a malformed conninfo fails in connect, as this route's error
    env = {"connect_timeout": "PGCONNECT_TIMEOUT"}
    return {
        k: v
        for k, v in _LINK_DEFAULTS.items()
        if k not in given and not (k in env and env[k] in os.environ)
    }


def _where(conninfo: str) -> str:
    """Host, port and database of a conninfo, for a log line (never its other settings)."""
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "(unparsable conninfo)"
    keys = ("host", "port", "dbname")
    return " ".join(f"{k}={params[k]}" for k in keys if params.get(k)) or "(defaults)"
