"""Bus: the blocking client of the mbus queue API.

Generated from ``src/pgmbus/queues/_bus_async.py`` by ``tools/async_to_sync.py``; do not edit.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, LiteralString

import psycopg
from psycopg import Connection, sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from pgmbus import args
from pgmbus.data.queues import QUEUES as Q
from pgmbus.dsn import resolve_dsn
from pgmbus.errors import (
    InvalidArgument,
    InvalidPayload,
    NotFound,
    PgmbusError,
    StaleLease,
    TimeoutExpired,
    translating,
)
from pgmbus.handlers import Handlers
from pgmbus.queues import edge_times
from pgmbus.queues.model import (
    ConsumerStats,
    DeadMessage,
    Message,
    QueueCounters,
    QueueInfo,
    check_name,
)
from pgmbus.reconnect import is_transient
from pgmbus.renamed import renamed_keywords

log = logging.getLogger("pgmbus.queues")


def _json(value: Mapping[str, Any] | None, what: str) -> Jsonb | None:
    if value is None:
        return None
    text = args.json_text(what, value)  # checked and dumped once: the driver sends this text
    return Jsonb(value, dumps=lambda _: text)


def _jsons(value: Any, what: str) -> list[Jsonb | None]:
    """A sequence of JSON objects (a batch's data, headers or properties)."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes | Mapping):
        raise InvalidArgument(f"{what} must be a sequence of mappings", sqlstate="MB006")
    return [_json(item, f"{what}[{i}]") for i, item in enumerate(value)]


def _seconds(value: float | timedelta, what: str = "a duration") -> timedelta:
    args.seconds(what, value)
    if isinstance(value, timedelta):
        return value
    try:
        return timedelta(seconds=value)
    except (OverflowError, ValueError) as exc:  # inf, nan, beyond timedelta's 999,999,999 days
        raise InvalidArgument(
            f"{what} of {value!r} seconds is out of range", sqlstate="MB006"
        ) from exc


def _check_limit(limit: int) -> None:
    # an int beyond int4 (or a float) would name no function: NotFound, not what is wrong
    args.integer("limit", limit, low=0, high=2**31 - 1)


def channel(queue: str) -> str:
    """The NOTIFY channel a committed post to ``queue`` signals (payload: the queue name).

    Posts notify only while a session waits (``mbus.await_queue``); see docs/queues.md.
    """
    return "mbus_q_" + check_name("queue", queue)


class Wakeups:
    """A queue's wake-ups, from :meth:`Bus.wakeups`.

    ``conn`` is the listening connection (idle between waits: a caller may run statements on
    it, as ``consume`` does to claim without a pool round trip).
    """

    def __init__(self, conn: Connection[Any], poll_interval: float) -> None:
        self.conn = conn
        self.poll_interval = poll_interval

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` (at most the bus's ``poll_interval``) for a wake-up; True when
        one came. A wake-up is a hint, not a message: look at the queue again either way.
        Cancelling the wait is safe (no statement runs during it)."""
        woken = False
        # Run the generator to its end (stop_after=1): leaving it early would keep the
        # connection's lock until the generator is collected.
        for _note in self.conn.notifies(
            timeout=max(0.0, min(seconds, self.poll_interval)), stop_after=1
        ):
            woken = True
        return woken


class Bus(Handlers):
    """A client of the mbus queues on one database.

    ``@bus.handler(queue, ...)`` declares handlers that ``pgmbus worker module:bus`` runs
    (:class:`pgmbus.handlers.Handlers`, docs/workers.md).

    Parameters
    ----------
    dsn:
        Connection string (the DSN rule applies: else ``PGMBUS_DSN``, else the embedded cluster).
    pool:
        An open pool to use instead of making one (its connections must be in autocommit mode
        for blocking consumes to hear NOTIFY at once). The bus does not close a pool it was given.
    max_size:
        Size of the pool the bus makes. A blocking consume holds one extra connection while it
        waits (the one that LISTENs).
    poll_interval:
        Seconds between polls while a blocking consume waits; a wake-up (NOTIFY) ends the wait
        earlier, so a lost notification costs at most this much latency.
    rotate_every:
        Seconds between the times ``consume``/``lease``/``listen`` of a queue ask for its
        storage upkeep (``mbus.upkeep_queue``, on a pooled autocommit connection): it runs
        ``mbus.rotate_queue`` (truncate drained segments, start a new one) when the queue's
        ``upkeep_every`` has passed since its last upkeep, the clock its claims use too; None:
        never ask (then run ``pgmbus queue rotate --every`` or call ``mbus.rotate_queues()``
        yourself). See docs/queues.md, Storage.

    Every method that reads or writes messages takes ``conn``: pass your own connection to run
    inside your transaction (a post then exists exactly when you commit; a consume is undone by
    your rollback). Without it the bus uses a pooled autocommit connection.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        max_size: int = 4,
        poll_interval: float = 1.0,
        rotate_every: float | None = 1.0,
    ) -> None:
        self.poll_interval = poll_interval
        self.rotate_every = rotate_every
        self._rotated: dict[str, float] = {}
        self._own_pool = pool is None
        if pool is None:
            pool = ConnectionPool(
                resolve_dsn(dsn),
                min_size=1,
                max_size=max_size,
                kwargs={"autocommit": True},
                open=False,
            )
        self.pool = pool
        self._composed: dict[tuple[str, str, str, str | None], sql.Composed] = {}
        self._known: set[tuple[str, str]] = set()

    def open(self) -> Bus:
        """Open the pool (when the bus made it); returns the bus."""
        if self._own_pool:
            self.pool.open(wait=True)
        return self

    def close(self) -> None:
        """Close the pool (when the bus made it)."""
        if self._own_pool:
            self.pool.close()

    def __enter__(self) -> Bus:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- plumbing -------------------------------------------------------------------------------

    @contextmanager
    def _connection(
        self, conn: Connection[Any] | None
    ) -> Iterator[Connection[Any]]:
        if conn is not None:
            yield conn
            return
        try:
            with self.pool.connection() as pooled:
                yield pooled
        except psycopg.OperationalError:
            # The server restarted or the network cut us off: the pool's idle connections are
            # likely broken too. Drop them now, so that only this call fails and the next one
            # gets a new connection (the pool discards the broken one we used by itself).
            self._drop_broken()
            raise

    def _drop_broken(self) -> None:
        try:
            self.pool.check()
        except Exception as exc:  # a pool being closed: nothing to drop
            log.debug("pool check after a connection error failed: %s", exc)

    def _generated(
        self,
        name: LiteralString,
        what: str,
        queue: str,
        consumer: str | None = None,
        conn: Connection[Any] | None = None,
    ) -> sql.Composed:
        """The named query ``name`` calling the function ``what`` generated for ``queue`` (and
        ``consumer``). The database names it (mbus.generated_name, the one owner of generated
        names): asked once per bus and function, then kept."""
        key = (name, what, queue, consumer)
        query = self._composed.get(key)
        if query is None:
            params = {"what": what, "queue": queue, "consumer": consumer}
            fn = str(self._value(Q["generated_name"], params, conn))
            query = sql.SQL(Q[name]).format(fn=sql.Identifier(fn))
            self._composed[key] = query
        return query

    def _rows(
        self,
        query: LiteralString | sql.Composed,
        params: Mapping[str, Any],
        conn: Connection[Any] | None = None,
    ) -> list[dict[str, Any]]:
        with self._connection(conn) as c:
            cur = c.cursor(row_factory=dict_row)
            edge_times.register(cur)  # a claim's rows must be readable: it has committed
            with translating():
                cur.execute(query, params)
                if cur.description is None:
                    return []
                return cur.fetchall()

    def _value(
        self,
        query: LiteralString | sql.Composed,
        params: Mapping[str, Any],
        conn: Connection[Any] | None = None,
    ) -> Any:
        rows = self._rows(query, params, conn)
        return next(iter(rows[0].values())) if rows else None

    # --- queues, consumers, triggers ---------------------------------------------------------

    def create_queue(
        self, queue: str, ncons: int = 1, *, roles_security: bool = False
    ) -> None:
        """Create ``queue`` and its ``default`` consumer; on an existing queue, regenerate its
        functions (the original mbus API's rule). ``ncons`` is kept for that API's signature,
        unused."""
        args.integer("ncons", ncons, low=0, high=2**31 - 1)
        args.flag("roles_security", roles_security)
        self._rows(
            Q["create_queue"],
            {"queue": check_name("queue", queue), "ncons": ncons, "roles": roles_security},
        )

    def drop_queue(self, queue: str) -> None:
        """Drop ``queue`` with its consumers, pending messages, triggers and functions."""
        self._rows(Q["drop_queue"], {"queue": check_name("queue", queue)})

    def create_consumer(
        self, queue: str, consumer: str, selector: str | None = None, *, noindex: bool = False
    ) -> None:
        """Create a durable consumer; it receives the messages posted from now on for which
        ``selector`` (a static SQL expression over ``t``, type ``mbus.qt_model``) holds."""
        args.text("selector", selector, optional=True)
        args.flag("noindex", noindex)
        self._rows(
            Q["create_consumer"],
            {
                "queue": check_name("queue", queue),
                "consumer": check_name("consumer", consumer),
                "selector": selector,
                "noindex": noindex,
            },
        )

    def drop_consumer(self, queue: str, consumer: str) -> None:
        """Drop a consumer with its pending deliveries."""
        self._rows(
            Q["drop_consumer"],
            {"queue": check_name("queue", queue), "consumer": check_name("consumer", consumer)},
        )

    def create_trigger(self, src: str, dst: str, selector: str | None = None) -> None:
        """Copy every message posted to ``src`` into ``dst`` when ``selector`` holds."""
        args.text("selector", selector, optional=True)
        self._rows(
            Q["create_trigger"],
            {
                "src": check_name("queue", src),
                "dst": check_name("queue", dst),
                "selector": selector,
            },
        )

    def drop_trigger(self, src: str, dst: str) -> None:
        """Remove the trigger from ``src`` to ``dst``."""
        self._rows(
            Q["drop_trigger"], {"src": check_name("queue", src), "dst": check_name("queue", dst)}
        )

    def queues(self) -> list[QueueInfo]:
        """Every queue with its consumers and trigger destinations."""
        return [QueueInfo(**r) for r in self._rows(Q["list_queues"], {})]

    def stats(self, queue: str | None = None) -> list[ConsumerStats]:
        """Depth, ready, delayed, leased, expired, oldest age, dead messages, selector errors,
        posted and consumed totals, paused."""
        if queue is not None:
            check_name("queue", queue)
        return [ConsumerStats(**r) for r in self._rows(Q["stats"], {"queue": queue})]

    def counters(self, queue: str | None = None) -> list[QueueCounters]:
        """Posted and consumed totals per queue (``cname`` None) and consumer; reads no queue
        table (see :class:`QueueCounters`)."""
        if queue is not None:
            check_name("queue", queue)
        return [QueueCounters(**r) for r in self._rows(Q["counters"], {"queue": queue})]

    def _target(self, queue: str, consumer: str | None) -> dict[str, str | None]:
        return {
            "queue": check_name("queue", queue),
            "consumer": None if consumer is None else check_name("consumer", consumer),
        }

    def pause(self, queue: str, consumer: str | None = None) -> bool:
        """Pause ``queue`` (every consumer) or one ``consumer``: its claims return nothing until
        :meth:`resume`; posts are still accepted. Returns False when it was paused already.
        Raises ``NotFound`` for an unknown queue or consumer."""
        return bool(self._value(Q["pause"], self._target(queue, consumer)))

    def resume(self, queue: str, consumer: str | None = None) -> bool:
        """Undo :meth:`pause` (wakes waiting consumers); returns False when it was not paused."""
        return bool(self._value(Q["resume"], self._target(queue, consumer)))

    def purge(self, queue: str, consumer: str | None = None) -> int:
        """Delete the pending messages of ``queue`` (every consumer) or of one ``consumer``;
        returns how many deliveries went. Leased deliveries and those a transaction is
        consuming are left alone; purged ones are not counted as consumed."""
        return int(self._value(Q["purge"], self._target(queue, consumer)))

    # --- posting ----------------------------------------------------------------------------

    def get_iid(self, queue: str) -> str:
        """A new iid for ``queue`` (to post with later, e.g. to refer to a message in advance)."""
        return str(self._value(Q["get_iid"], {"queue": check_name("queue", queue)}))

    def post(
        self,
        queue: str,
        data: Mapping[str, Any],
        *,
        headers: Mapping[str, Any] | None = None,
        properties: Mapping[str, Any] | None = None,
        delayed_until: datetime | None = None,
        expires: datetime | None = None,
        iid: str | None = None,
        dedupe_key: str | None = None,
        consume_after: str | Sequence[str] | None = None,
        priority: int = 0,
        conn: Connection[Any] | None = None,
    ) -> str:
        """Post one message; returns its iid.

        With ``conn`` the message joins that connection's transaction: it exists exactly when
        the transaction commits. A given ``iid`` posted to the queue within the setting
        ``queues.iid_window`` (default 24 hours; consumed or not), or still pending there, makes
        the post a no-op returning it (idempotent posts: retry an unknown outcome with the same
        iid), with notice ``01M01`` on the connection (see it with ``conn`` and
        ``conn.add_notice_handler``); posted with ``conn`` in the transaction that consumed
        that message, it is stored (the retry of the original mbus API: consume, then post it
        again with its iid and ``delayed_until``); an iid of the generated form
        ``<queue>.<n>@<database>`` must come from :meth:`get_iid` (``InvalidArgument``
        otherwise). Raises ``InvalidArgument`` when ``expires`` is not in the future or not
        after ``delayed_until``, and ``InvalidState`` when the queue has no consumer.

        ``dedupe_key``: at most one pending message per key and queue; while the message last
        posted with the key is pending (for any consumer), the post does nothing and returns
        that message's iid. ``consume_after``: the iid or iids this message waits for (the
        seed's named parameter; merged with ``headers["consume_after"]``). ``priority``: 0 to
        32767 (default 0); claims take higher priorities first, FIFO within one priority
        (``InvalidArgument`` outside that range, nothing posted).
        """
        check_name("queue", queue)
        if data is None:
            raise InvalidPayload("data must not be None", sqlstate="MB005")
        args.moment("delayed_until", delayed_until)
        args.moment("expires", expires)
        args.text("iid", iid, optional=True)
        args.text("dedupe_key", dedupe_key, optional=True)
        consume_after = args.texts("consume_after", consume_after, optional=True)
        args.integer("priority", priority, low=0, high=32767)
        params = {
            "data": _json(data, "data"),
            "headers": _json(headers, "headers"),
            "properties": _json(properties, "properties"),
            "delayed_until": delayed_until,
            "expires": expires,
            "iid": iid,
            "dedupe_key": dedupe_key,
            "consume_after": consume_after,
            "priority": priority,
        }
        query = self._generated("post", "post", check_name("queue", queue), conn=conn)
        with self._naming_a_missing_queue(queue):
            return str(self._value(query, params, conn))

    def post_batch(
        self,
        queue: str,
        data: Sequence[Mapping[str, Any]],
        *,
        headers: Sequence[Mapping[str, Any]] | None = None,
        properties: Sequence[Mapping[str, Any]] | None = None,
        delayed_until: datetime | None = None,
        expires: datetime | None = None,
        priority: int | Sequence[int] | None = None,
        conn: Connection[Any] | None = None,
    ) -> list[str]:
        """Post many messages in one statement per consumer; returns their iids in order.

        ``priority``: one for every message (an int) or one per message (a sequence as long as
        ``data``), each 0 to 32767 (``InvalidArgument`` otherwise, nothing posted).
        """
        check_name("queue", queue)
        args.moment("delayed_until", delayed_until)
        args.moment("expires", expires)
        batch = _jsons(data, "data")
        if any(d is None for d in batch):
            raise InvalidPayload("data must not hold None", sqlstate="MB005")
        if priority is None or isinstance(priority, int):
            args.integer("priority", priority, low=0, high=32767, optional=True)
            priorities = None if not priority else [priority] * len(data)
        else:
            if not isinstance(priority, Sequence) or isinstance(priority, str | bytes):
                raise InvalidArgument(
                    f"priority must be an int or a sequence of int, not {type(priority).__name__}",
                    sqlstate="MB006",
                )
            priorities = [
                int(args.integer(f"priority[{i}]", p, low=0, high=32767) or 0)
                for i, p in enumerate(priority)
            ]
            if len(priorities) != len(data):
                raise InvalidArgument(
                    f"priority has {len(priorities)} elements for {len(data)} messages",
                    sqlstate="MB006",
                )
        params = {
            "data": batch,
            "headers": None if headers is None else _jsons(headers, "headers"),
            "properties": None if properties is None else _jsons(properties, "properties"),
            "delayed_until": delayed_until,
            "expires": expires,
            "priority": priorities,
        }
        query = self._generated("post_batch", "postn", check_name("queue", queue), conn=conn)
        with self._naming_a_missing_queue(queue):
            return [str(r["iid"]) for r in self._rows(query, params, conn)]

    # --- consuming --------------------------------------------------------------------------

    def _consume_once(
        self,
        queue: str,
        consumer: str,
        amount: int,
        conn: Connection[Any] | None,
        now: datetime | None,
    ) -> list[Message]:
        query = self._generated("consumen", "consumen", queue, consumer, conn)
        params = {"amount": amount, "now": now, "queue": queue, "consumer": consumer}
        rows = self._rows(query, params, conn)
        if not rows:  # not even the row of NULLs: the pair is gone
            self._recheck_consumer(queue, consumer)
        return [Message.from_row(queue, consumer, r) for r in rows if r["id"] is not None]

    def _lease_once(
        self,
        queue: str,
        consumer: str,
        amount: int,
        lease: timedelta,
        max_attempts: int | None,
        now: datetime | None,
    ) -> list[Message]:
        query = self._generated("lease", "lease", queue, consumer)
        params = {
            "amount": amount,
            "lease": lease,
            "max_attempts": max_attempts,
            "now": now,
            "queue": queue,
            "consumer": consumer,
        }
        rows = self._rows(query, params)
        if not rows:  # not even the row of NULLs: the pair is gone
            self._recheck_consumer(queue, consumer)
        return [Message.from_row(queue, consumer, r) for r in rows if r["id"] is not None]

    def rotate(self, queue: str, *, tries: int = 100) -> dict[str, Any]:
        """Run the storage upkeep of ``queue`` now (``mbus.rotate_queue``), in autocommit.

        Truncates the queue's drained segments (skipping, never waiting for, a segment an open
        transaction touched: ``tries`` attempts a millisecond apart) and starts a new segment
        once the current one is full. Returns the report: ``current``, ``rotated``,
        ``truncated``, ``busy``, ``kept`` (segments with rows left).
        """
        report = self._value(
            Q["rotate_queue"], {"queue": check_name("queue", queue), "tries": tries}
        )
        return dict(report or {})

    def _upkeep(self, queue: str) -> None:
        # Consumers of a queue keep its storage flat: at most once per rotate_every, before a
        # claim (a claim in the caller's open transaction would make its own segment busy).
        if self.rotate_every is None:
            return
        now = time.monotonic()
        last = self._rotated.get(queue)
        if last is not None and now - last < self.rotate_every:
            return
        self._rotated[queue] = now
        try:
            # rotate_every only spaces the asking; whether the upkeep runs is the queue's clock
            # (upkept_at, upkeep_every), the one the claims use, shared by every process
            self._value(Q["upkeep_queue"], {"queue": check_name("queue", queue), "tries": 20})
        except (PgmbusError, psycopg.Error) as exc:  # best effort: the next call tries again
            log.warning("upkeep_queue(%s) failed: %s", queue, exc)

    @contextmanager
    def _naming_a_missing_queue(self, queue: str) -> Iterator[None]:
        # A call of a queue's generated function fails with "function mbus.post_x(...) does
        # not exist" when the queue does not: say that instead (MB002 naming the queue).
        try:
            yield
        except NotFound as exc:
            if exc.sqlstate == "42883":
                self._rows(Q["require_queue"], {"queue": queue})
            raise

    def _recheck_consumer(self, queue: str, consumer: str) -> None:
        # An empty claim may mean the consumer is gone (its generated name now another's):
        # NotFound then, as on a first call, not [] for ever.
        self._known.discard((queue, consumer))
        self._check_consumer(queue, consumer)

    def _check_consumer(self, queue: str, consumer: str) -> None:
        # Once per bus, then again only after an empty claim (_recheck_consumer): the claim
        # itself runs only while the pair exists (see 'consumen' in sql/queues.sql).
        if (queue, consumer) in self._known:
            return
        check_name("queue", queue)
        check_name("consumer", consumer)
        self._rows(Q["require_consumer"], {"queue": queue, "consumer": consumer})
        self._known.add((queue, consumer))

    @renamed_keywords(amount="limit", timeout="wait")
    def consume(
        self,
        queue: str,
        consumer: str = "default",
        *,
        limit: int = 1,
        wait: float = 0.0,
        conn: Connection[Any] | None = None,
        now: datetime | None = None,
    ) -> list[Message]:
        """Claim up to ``limit`` messages for ``consumer`` (transactional style).

        The messages are removed when the transaction of ``conn`` commits and come back at once
        on rollback; without ``conn`` they are removed at once (autocommit). With ``wait``
        > 0 the call waits up to that many seconds for a message, woken by the queue's NOTIFY
        and polling every ``poll_interval`` seconds. Returns [] when nothing is available.
        The old spellings ``amount=`` and ``timeout=`` still work (deprecated).
        """
        _check_limit(limit)
        args.seconds("wait", wait)
        args.moment("now", now)
        self._check_consumer(queue, consumer)
        self._upkeep(queue)
        got = self._consume_once(queue, consumer, limit, conn, now)
        if got or wait <= 0:
            return got
        deadline = time.monotonic() + wait
        with self.wakeups(queue) as wakeups:
            # Without a caller's connection, claim on the listener's: no pool round trip
            # between the wake-up and the claim.
            claim_conn = conn if conn is not None else wakeups.conn
            while True:
                self._upkeep(queue)
                got = self._consume_once(queue, consumer, limit, claim_conn, now)
                remaining = deadline - time.monotonic()
                if got or remaining <= 0:
                    return got
                wakeups.wait(remaining)

    @renamed_keywords(amount="limit", timeout="wait")
    def lease(
        self,
        queue: str,
        consumer: str = "default",
        *,
        limit: int = 1,
        lease: float | timedelta = 30.0,
        max_attempts: int | None = None,
        wait: float = 0.0,
        now: datetime | None = None,
    ) -> list[Message]:
        """Claim up to ``limit`` messages under a lease (visibility timeout) of ``lease``
        seconds; finish each with ``ack``, ``nack``, ``extend`` or ``bury``.

        An unfinished message is delivered again when its lease ends, with ``attempts`` one
        higher; a message already delivered ``max_attempts`` times goes to the dmq instead.
        ``wait`` waits as in ``consume``. The old spellings ``amount=`` and ``timeout=`` still
        work (deprecated). Cancelling the call while its statement runs may drop a lease the
        server just granted (leased to no one until it ends, an attempt counted): to stop
        waiting at will, wait on :meth:`wakeups` and lease with ``wait=0``, as the worker does.
        """
        _check_limit(limit)
        args.seconds("wait", wait)
        args.moment("now", now)
        args.integer("max_attempts", max_attempts, low=1, high=2**31 - 1, optional=True)
        span = _seconds(lease, "lease")
        self._check_consumer(queue, consumer)
        self._upkeep(queue)
        got = self._lease_once(queue, consumer, limit, span, max_attempts, now)
        if got or wait <= 0:
            return got
        deadline = time.monotonic() + wait
        with self.wakeups(queue) as wakeups:
            while True:
                self._upkeep(queue)
                got = self._lease_once(queue, consumer, limit, span, max_attempts, now)
                remaining = deadline - time.monotonic()
                if got or remaining <= 0:
                    return got
                wakeups.wait(remaining)

    @contextmanager
    def wakeups(self, queue: str) -> Iterator[Wakeups]:
        """Listen for ``queue``'s wake-ups while the block runs: the NOTIFY a post (or a
        ``resume``) sends while some session waits; see :class:`Wakeups`.

        For callers that run their own wait loop: open it, then look at the queue (``consume``
        or ``lease`` with ``wait=0``), then ``wakeups.wait(seconds)``; a post committed
        after the block opened wakes the wait, so none slips between the look and the wait.
        The block holds one pooled connection.
        """
        with self._connection(None) as listener:
            listener.execute(Q["await_queue"], {"queue": check_name("queue", queue)})
            try:
                yield Wakeups(listener, self.poll_interval)
            finally:
                listener.execute(Q["await_done"], {"queue": queue})

    def _token_query(
        self, name: LiteralString, message: Message, what: LiteralString | None = None
    ) -> sql.Composed:
        _require_lease(message)
        return self._generated(name, what or name, check_name("queue", message.queue))

    def ack(self, message: Message, *, now: datetime | None = None) -> None:
        """The leased message is done: remove it. ``StaleLease`` when the lease was lost."""
        query = self._token_query("ack", message)
        args.moment("now", now)
        with self._naming_a_missing_queue(message.queue):
            self._rows(query, {"token": message.lease_token, "now": now})

    def nack(
        self, message: Message, *, delay: float | timedelta = 0.0, now: datetime | None = None
    ) -> None:
        """Give the leased message back; it is delivered again after ``delay`` seconds."""
        query = self._token_query("nack", message)
        args.moment("now", now)
        params = {"token": message.lease_token, "delay": _seconds(delay, "delay"), "now": now}
        with self._naming_a_missing_queue(message.queue):
            self._rows(query, params)

    def extend(
        self, message: Message, lease: float | timedelta, *, now: datetime | None = None
    ) -> datetime:
        """Make the lease end ``lease`` seconds from now; returns the new end."""
        query = self._token_query("extend", message)
        args.moment("now", now)
        params = {"token": message.lease_token, "lease": _seconds(lease, "lease"), "now": now}
        with self._naming_a_missing_queue(message.queue):
            end: datetime = self._value(query, params)
        return end

    def bury(self, message: Message, reason: str, *, now: datetime | None = None) -> int:
        """Move the leased message to the dead-message queue with ``reason``; returns its dmq id."""
        query = self._token_query("bury", message)
        args.text("reason", reason)
        args.moment("now", now)
        params = {"token": message.lease_token, "reason": reason, "now": now}
        with self._naming_a_missing_queue(message.queue):
            return int(self._value(query, params))

    def ack_many(
        self, messages: Sequence[Message], *, now: datetime | None = None
    ) -> list[Message]:
        """Ack leased messages of one queue in one statement; returns those whose lease was no
        longer held (the others are acked).

        The statement acks all or none: when a lease in it was lost, each message is then
        acked on its own, so the ones still held are acked and the lost ones returned.
        """
        return self._each_lease("ack_many", "ack", messages, {"now": now})

    def extend_many(
        self, messages: Sequence[Message], lease: float | timedelta, *, now: datetime | None = None
    ) -> list[Message]:
        """Extend the leases of messages of one queue to ``lease`` seconds from now in one
        statement; returns those whose lease was no longer held (as :meth:`ack_many`)."""
        return self._each_lease(
            "extend_many", "extend", messages, {"lease": _seconds(lease, "lease"), "now": now}
        )

    def _each_lease(
        self,
        name: LiteralString,
        what: LiteralString,
        messages: Sequence[Message],
        params: dict[str, Any],
    ) -> list[Message]:
        args.moment("now", params["now"])
        if not messages:
            return []
        queue = messages[0].queue
        if any(m.queue != queue for m in messages):
            raise InvalidArgument("the messages must all be of one queue", sqlstate="MB006")
        for message in messages:
            _require_lease(message)
        query = self._token_query(name, messages[0], what)
        try:
            with self._naming_a_missing_queue(queue):
                self._rows(query, {**params, "tokens": [m.lease_token for m in messages]})
        except StaleLease:
            if len(messages) == 1:
                return list(messages)
        else:
            return []
        lost: list[Message] = []
        for message in messages:  # rare: a lease ran out; the statement above changed nothing
            lost += self._each_lease(name, what, [message], params)
        return lost

    def listen(
        self,
        queue: str,
        consumer: str = "default",
        *,
        lease: float = 30.0,
        max_attempts: int | None = None,
        batch: int = 10,
    ) -> Iterator[Message]:
        """Yield messages for ``consumer`` as they arrive, forever (at least once).

        Messages are claimed ``batch`` at a time with a lease; a message is acknowledged when
        the loop asks for the next one, so a message whose loop body raised (or after which the
        loop broke off) is delivered again when its lease ends. The leases of the messages of a
        batch not yet yielded are extended while the loop body works on the earlier ones, so a
        slow body does not let them go to another consumer; one whose lease was lost anyway is
        skipped, not yielded twice. When the loop ends, the messages claimed ahead and never
        yielded are given back at once (``nack``; their attempt counts). Database errors that a
        retry can get past (server restart, cut connection, timeouts; see
        :func:`pgmbus.reconnect.is_transient`) are logged and the loop goes on: the pool waits
        for the server to come back, and a message whose ack was lost is delivered again when
        its lease ends.
        """
        span = _seconds(lease, "lease")
        ahead: list[Message] = []  # claimed, not yet yielded
        try:
            while True:
                try:
                    ahead = self.lease(
                        queue,
                        consumer,
                        limit=batch,
                        lease=span,
                        max_attempts=max_attempts,
                        wait=self.poll_interval,
                    )
                except Exception as exc:
                    if not is_transient(exc):
                        raise
                    log.warning("listen(%s, %s): lease failed, retrying: %s", queue, consumer, exc)
                    continue
                leased_at = time.monotonic()
                while ahead:
                    if time.monotonic() - leased_at > span.total_seconds() / 2:
                        ahead = self._keep_ahead(ahead, span)
                        leased_at = time.monotonic()
                        if not ahead:
                            break
                    message = ahead.pop(0)
                    yield message
                    try:
                        self.ack(message)
                    except Exception as exc:
                        if not is_transient(exc):
                            raise
                        log.warning(
                            "listen(%s, %s): ack of %s failed; it is delivered again when its "
                            "lease ends: %s",
                            queue,
                            consumer,
                            message.iid,
                            exc,
                        )
        finally:
            self._give_back(ahead)

    def _keep_ahead(self, ahead: list[Message], lease: timedelta) -> list[Message]:
        """Extend the leases of the messages claimed ahead; those lost are dropped (they may
        be another consumer's now), and on a transient error they are kept as they are."""
        try:
            lost = self.extend_many(ahead, lease)
        except Exception as exc:
            if not is_transient(exc):
                raise
            log.warning("listen: extending %d leases failed: %s", len(ahead), exc)
            return ahead
        for message in lost:
            log.warning("listen: the lease of %s ended before it was yielded", message.iid)
        gone = {m.lease_token for m in lost}
        return [m for m in ahead if m.lease_token not in gone]

    def _give_back(self, ahead: list[Message]) -> None:
        for message in ahead:
            try:
                self.nack(message)
            except Exception as exc:  # at worst it comes back when its lease ends
                log.warning("listen: giving back %s failed: %s", message.iid, exc)

    # --- take, peek, clear ------------------------------------------------------------------

    def take(self, iid: str, *, conn: Connection[Any] | None = None) -> Message | None:
        """Take the message ``iid`` away from every consumer of the queue its iid names; waits
        while another transaction holds it; None when it is not there."""
        args.text("iid", iid)
        rows = self._rows(Q["take"], {"iid": iid}, conn)
        if not rows:
            return None
        return Message.from_row(iid.split(".", 1)[0], None, rows[0])

    def take_from(
        self, queue: str, consumer: str, iid: str, *, conn: Connection[Any] | None = None
    ) -> Message | None:
        """Take message ``iid`` for one consumer (``take_from_<q>_by_<c>``); waits like take."""
        args.text("iid", iid)
        params = {
            "queue": check_name("queue", queue),
            "consumer": check_name("consumer", consumer),
            "iid": iid,
        }
        rows = self._rows(Q["take_from"], params, conn)
        return Message.from_row(queue, consumer, rows[0]) if rows else None

    def peek(self, queue: str, iid: str | None = None) -> bool:
        """Is message ``iid`` (any message when None) in the queue? True does not promise that
        a consume will return it (it may be delayed, leased or locked)."""
        args.text("iid", iid, optional=True)
        return bool(self._value(Q["peek"], {"queue": check_name("queue", queue), "iid": iid}))

    def clear_queue(self, queue: str, *, now: datetime | None = None) -> int:
        """Delete the expired messages of ``queue``; returns how many."""
        args.moment("now", now)
        params = {"queue": check_name("queue", queue), "now": now}
        return int(self._value(Q["clear_queue"], params))

    # --- the dead-message queue -------------------------------------------------------------

    def dmq(self, queue: str | None = None, *, limit: int = 100) -> list[DeadMessage]:
        """Dead messages (of ``queue``, or all), oldest first."""
        _check_limit(limit)
        params = {"queue": None if queue is None else check_name("queue", queue), "limit": limit}
        return [DeadMessage(**r) for r in self._rows(Q["dmq_list"], params)]

    def dmq_replay(self, dmq_id: int, *, queue: str | None = None) -> str:
        """Put a dead message back (to its consumer, or posted to ``queue``); returns its iid."""
        args.integer("dmq_id", dmq_id, low=-(2**63))
        params = {
            "dmq_id": dmq_id,
            "queue": None if queue is None else check_name("queue", queue),
        }
        return str(self._value(Q["dmq_replay"], params))

    def dmq_delete(self, dmq_id: int) -> str:
        """Delete a dead message for good; returns its queue. Raises ``NotFound`` when no dead
        message has that id."""
        args.integer("dmq_id", dmq_id, low=-(2**63))
        return str(self._value(Q["dmq_delete"], {"dmq_id": dmq_id}))

    def post_dmq(
        self,
        message: Message,
        reason: str,
        *,
        conn: Connection[Any] | None = None,
    ) -> int:
        """Put a message that cannot be processed into the dmq, keeping its iid."""
        args.text("reason", reason)
        params = {
            "queue": message.queue,
            "data": _json(message.data, "data"),
            "headers": _json(message.headers, "headers"),
            "properties": _json(message.properties, "properties"),
            "iid": message.iid,
            "reason": reason,
            "consumer": message.consumer,
            "attempts": message.attempts,
        }
        return int(self._value(Q["post_dmq"], params, conn))

    # --- temporary queues and consumers, request-response ------------------------------------

    def create_temporary_queue(self, *, conn: Connection[Any] | None = None) -> str:
        """Create a queue that lives as long as the session (connection) that made it; returns
        its name. ``clear_tempq`` (also run by every create_temporary_*) drops it afterwards."""
        return str(self._value(Q["create_temporary_queue"], {}, conn))

    def create_temporary_consumer(
        self,
        queue: str,
        selector: str | None = None,
        *,
        conn: Connection[Any] | None = None,
    ) -> str:
        """Create a consumer of ``queue`` that lives as long as the session; returns its name."""
        args.text("selector", selector, optional=True)
        params = {"queue": check_name("queue", queue), "selector": selector}
        return str(self._value(Q["create_temporary_consumer"], params, conn))

    def clear_tempq(self) -> int:
        """Drop the temporary queues and consumers whose session has ended; returns how many."""
        return int(self._value(Q["clear_tempq"], {}))

    def request(
        self,
        queue: str,
        data: Mapping[str, Any],
        *,
        timeout: float,
        headers: Mapping[str, Any] | None = None,
        properties: Mapping[str, Any] | None = None,
    ) -> Message:
        """Post ``data`` to ``queue`` and wait up to ``timeout`` seconds for the reply.

        The request carries ``reply_to`` (a temporary queue made for this call) and a
        ``correlation_id`` in its headers; the responder answers with :meth:`reply`. On timeout
        the request is taken back if nobody consumed it yet, the reply queue is dropped, and
        :class:`~pgmbus.errors.TimeoutExpired` is raised: nothing is left behind.
        """
        args.seconds("timeout", timeout)
        check_name("queue", queue)
        args.json_object("data", data)
        args.json_object("headers", headers, optional=True)
        args.json_object("properties", properties, optional=True)
        correlation = str(uuid.uuid4())
        reply_to = self.create_temporary_queue()
        try:
            sent = dict(headers or {}) | {"reply_to": reply_to, "correlation_id": correlation}
            iid = self.post(queue, data, headers=sent, properties=properties)
            deadline = time.monotonic() + timeout
            while True:
                remaining = deadline - time.monotonic()
                got = self.consume(reply_to, wait=max(remaining, 0.0))
                for message in got:
                    if message.headers.get("correlation_id") == correlation:
                        return message
                if remaining <= 0:
                    self.take(iid)
                    raise TimeoutExpired(f"no reply from queue {queue!r} within {timeout} seconds")
        finally:
            self._rows(Q["drop_queue"], {"queue": reply_to})
            self._known.discard((reply_to, "default"))

    def reply(
        self,
        request: Message,
        data: Mapping[str, Any],
        *,
        headers: Mapping[str, Any] | None = None,
        properties: Mapping[str, Any] | None = None,
        conn: Connection[Any] | None = None,
    ) -> bool:
        """Answer a message sent with :meth:`request`; returns False when the requester has
        given up (its reply queue is gone), True when the reply was posted."""
        reply_to = request.headers.get("reply_to")
        if not isinstance(reply_to, str):
            raise InvalidArgument("the message has no reply_to header", sqlstate="MB006")
        sent = dict(headers or {}) | {"correlation_id": request.headers.get("correlation_id")}
        if not self._value(Q["queue_exists"], {"queue": check_name("queue", reply_to)}, conn):
            return False
        self.post(reply_to, data, headers=sent, properties=properties, conn=conn)
        return True


def _require_lease(message: Message) -> None:
    """MB006 unless ``message`` was claimed with a lease (it has a token to ack, extend, ...)."""
    if message.lease_token is None:
        raise InvalidArgument(
            "the message was not claimed with a lease (use lease(), not consume())",
            sqlstate="MB006",
        )
