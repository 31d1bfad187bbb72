"""A Kombu transport on pgmbus queues: Celery apps run on PostgreSQL with ``pgmbus://``.

Each Kombu queue is a pgmbus queue (its name folded into pgmbus's naming rule) read by its
``default`` consumer. Messages are claimed under a lease, as many in one query as the consumer
has free prefetch slots (the ones not yet delivered go back at once when the channel closes);
a worker whose prefetch is at least half full waits for acks, not for posts. A lease keeper
thread extends the leases of the messages the process holds, ``basic_ack`` acks them (in
batches: ``pgmbus.contrib.kombu_acks``), a requeue nacks them and a reject without requeue
buries them in the dead-message queue. A worker that dies (even by
SIGKILL) stops extending, so its unacknowledged messages are delivered again once their lease
ends (``visibility_timeout`` seconds, default 30). A Celery ``eta``/``countdown`` becomes the
message's ``delayed_until``: the message stays in PostgreSQL until it is due instead of waiting
in a worker's memory.
A task sent while the application holds an open transaction on the broker's database (Django's
``transaction.atomic``, or a connection or SQLAlchemy session bound with
``pgmbus.contrib.celery``) is posted in that transaction: it exists exactly when that
transaction commits (``pgmbus.contrib.app_transaction`` says which transaction a send joins).
A message's priority (``apply_async(priority=N)``, 0..255, higher first, as on RabbitMQ) becomes
the pgmbus message's priority: workers take higher priorities first, FIFO within one.
Exchange bindings are shared by every process in the database
(``pgmbus.contrib.kombu_bindings``): fanout exchanges work, and with them Celery's remote
control and events.

Importing this module registers the ``pgmbus`` alias, so ``broker_url = "pgmbus://..."`` works
(and ``result_backend = "pgmbus://..."``: :mod:`pgmbus.contrib.celery_results`)
(``pgmbus.contrib.celery`` imports it); ``broker_transport =
"pgmbus.contrib.kombu_transport:Transport"`` names the class without the import.

URL: ``pgmbus://user:password@host:port/database?sslmode=...`` is the PostgreSQL DSN with the
scheme replaced; a bare ``pgmbus://`` follows the DSN rule (``PGMBUS_DSN``, else the embedded
cluster). Transport options: ``dsn`` (wins over the URL), ``visibility_timeout`` (lease seconds),
``max_attempts`` (deliveries of one message before it goes to the dmq instead, default 20; 0 for
no bound),
``polling_interval`` (longest sleep of an idle worker, default 1.0: a post's NOTIFY wakes it
sooner), ``pool_size`` (default 4), ``ack_delay`` (seconds an ack waits to share its
statement, default 0.05).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import re
import threading
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from queue import Empty
from time import monotonic, sleep
from typing import Any
from urllib.parse import quote, urlencode
from uuid import UUID

import psycopg
import psycopg_pool
from kombu.transport import TRANSPORT_ALIASES, virtual
from psycopg.conninfo import conninfo_to_dict

from pgmbus.contrib import app_transaction
from pgmbus.contrib.kombu_acks import DEFAULT_DELAY as DEFAULT_ACK_DELAY
from pgmbus.contrib.kombu_acks import AckBuffer
from pgmbus.contrib.kombu_bindings import Bindings
from pgmbus.data.celery import CELERY
from pgmbus.dsn import resolve_dsn
from pgmbus.errors import DatabaseError, PgmbusError, StaleLease, translating
from pgmbus.queues import Bus, Message, await_done, await_queue
from pgmbus.queues.model import MAX_NAME

log = logging.getLogger("pgmbus.kombu")

ALIAS = "pgmbus"
TRANSPORT_ALIASES.setdefault(ALIAS, "pgmbus.contrib.kombu_transport:Transport")
with contextlib.suppress(ImportError):  # Kombu without Celery: no result backend to name
    from celery.app.backends import BACKEND_ALIASES

    BACKEND_ALIASES.setdefault(ALIAS, "pgmbus.contrib.celery_results:PgmbusBackend")

_NOT_NAME = re.compile(r"[^a-z0-9_]+")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
DEFAULT_VISIBILITY_TIMEOUT = 30.0
DEFAULT_POLLING_INTERVAL = 1.0
# A message whose task kills its worker (out of memory, a crash in C) comes back after each
# lease: after this many deliveries it goes to the dmq, instead of killing workers for ever.
DEFAULT_MAX_ATTEMPTS = 20
# Bad messages buried by one _get before it gives the loop back (it says Empty for now), so a
# queue full of them cannot keep one drain from returning.
_MAX_BURIED_PER_GET = 100
# Most messages one claim leases (a consumer's free prefetch slots, capped): one query instead
# of one per message.
_MAX_CLAIM = 100
# Seconds a busy worker leaves a queue consumed without acks (its remote-control mailbox, an
# event receiver's queue) alone after finding it empty.
_QUIET = 0.1


def queue_name(kombu_queue: str) -> str:
    """The pgmbus queue that holds the Kombu queue ``kombu_queue``.

    Lower case, other characters folded to ``_``; a name that still breaks the rule (empty,
    leading digit, longer than 24 bytes) becomes ``k_`` + a digest of the original.
    """
    folded = _NOT_NAME.sub("_", kombu_queue.lower()).strip("_")
    if _NAME.match(folded) and len(folded) <= MAX_NAME and folded == kombu_queue:
        return folded
    if _NAME.match(folded) and len(folded) <= MAX_NAME - 9:
        # folded names could collide ("a.b" and "a-b"): a short digest keeps them apart
        return folded + "_" + _digest(kombu_queue, 4)
    return "k_" + _digest(kombu_queue, (MAX_NAME - 2) // 2)


def _digest(text: str, size: int) -> str:
    return hashlib.blake2b(text.encode(), digest_size=size).hexdigest()


def dsn_from_url(url: str | None) -> str | None:
    """The PostgreSQL DSN of a ``pgmbus://`` URL; None for a bare ``pgmbus://`` (DSN rule)."""
    if not url:
        return None
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url  # a plain libpq DSN ("host=... dbname=...") given as the hostname
    if scheme != ALIAS:
        return url
    if rest in ("", "/"):
        return None
    return "postgresql://" + rest


def url_from_dsn(dsn: str) -> str:
    """The ``pgmbus://`` broker URL of a PostgreSQL DSN (a URL or ``key=value`` pairs)."""
    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    user = quote(params.pop("user", ""), safe="")
    password = params.pop("password", None)
    dbname = quote(params.pop("dbname", ""), safe="")
    auth = user + (":" + quote(password, safe="") if password is not None else "")
    query = urlencode(params, quote_via=quote)
    return f"{ALIAS}://{auth + '@' if auth else ''}/{dbname}" + (f"?{query}" if query else "")


# SQLSTATE classes of a lost or closing connection: Kombu must reconnect, not crash
_LOST = ("08", "57P")


@contextlib.contextmanager
def connection_errors() -> Iterator[None]:
    """Re-raise a typed pgmbus error that means the connection is gone as
    ``psycopg.OperationalError`` (one of the transport's ``connection_errors``)."""
    try:
        yield
    except DatabaseError as exc:
        # the SQLSTATE the server raised (pgmbus errors keep it in .sqlstate)
        state = exc.sqlstate
        if state is not None and state.startswith(_LOST):
            raise psycopg.OperationalError(str(exc)) from exc
        raise


def eta_of(message: dict[str, Any]) -> datetime | None:
    """The ``eta`` Celery put in the message headers (protocol 2), as an aware datetime."""
    headers = message.get("headers") or {}
    eta = headers.get("eta")
    if not isinstance(eta, str) or not eta:
        return None
    try:
        when = datetime.fromisoformat(eta)
    except ValueError:
        log.warning("ignoring an eta that is not ISO 8601: %r", eta)
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


class _LeaseKeeper:
    """A daemon thread that extends the leases of the messages a channel holds."""

    def __init__(self, bus: Bus, lease: float) -> None:
        self.bus = bus
        self.lease = lease
        self.held: dict[UUID, Message] = {}
        self.lost = 0  # leases that ended while their message was held (it may run twice)
        self.lock = threading.Lock()
        # Held by a tick and by an ack flush (pgmbus.contrib.kombu_acks): an extension then
        # never races an ack, so a batch of extensions fails only for a lease really lost.
        self.turn = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pgmbus-lease-keeper", daemon=True)
        self._thread.start()

    def hold(self, message: Message) -> None:
        if message.lease_token is None:
            raise ValueError("only leased messages are held")
        with self.lock:
            self.held[message.lease_token] = message

    def release(self, token: UUID) -> Message | None:
        with self.lock:
            return self.held.pop(token, None)

    def get(self, token: UUID) -> Message | None:
        with self.lock:
            return self.held.get(token)

    def _run(self) -> None:
        while not self._stop.wait(self.lease / 3):
            self.tick()

    def tick(self) -> None:
        """Extend the lease of every message held now: one statement per queue."""
        with self.turn:
            with self.lock:
                messages = list(self.held.values())
            by_queue: dict[str, list[Message]] = {}
            for message in messages:
                by_queue.setdefault(message.queue, []).append(message)
            for queue, held in by_queue.items():
                if len(held) > 1 and self._extend_all(queue, held):
                    continue
                for message in held:
                    self.extend(message)

    def _extend_all(self, queue: str, messages: list[Message]) -> bool:
        """Extend ``messages`` in one statement; False when one lease was gone (an ack
        raced it, or it was lost): then each is extended alone, to tell which."""
        params = {
            "queue": queue,
            "tokens": [m.lease_token for m in messages],
            "lease": timedelta(seconds=self.lease),
        }
        try:
            with self.bus.pool.connection() as conn, translating():
                conn.execute(CELERY["extend_many"], params)
        except StaleLease:
            return False
        except (PgmbusError, psycopg.Error, OSError) as exc:  # retried at the next tick
            log.warning("could not extend the leases of %d messages: %s", len(messages), exc)
        return True

    def extend(self, message: Message) -> None:
        """Extend one lease; a lease found gone while still held is lost (counted, told once)."""
        try:
            self.bus.extend(message, self.lease)
        except StaleLease:
            # An ack (or reject) between our snapshot and this extension released the message
            # and ended its lease: that is no loss. Only a message still held lost its lease.
            if self.release(message.lease_token) is not None:  # type: ignore[arg-type]
                self.lost_lease(message)
        except (PgmbusError, OSError) as exc:  # retried at the next tick
            log.warning("could not extend the lease of %s: %s", message.iid, exc)

    def lost_lease(self, message: Message) -> None:
        """Count and tell a lease that ended before the message was done."""
        with self.lock:
            self.lost += 1
        log.warning("lease of %s was lost (it may run twice)", message.iid)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _reconnecting(method: Any) -> Any:
    """Run a channel method under ``connection_errors``."""

    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        with connection_errors():
            return method(*args, **kwargs)

    return run


class Channel(virtual.Channel):
    """A Kombu channel whose queues are pgmbus queues."""

    # Message priority as on RabbitMQ (a broker with native priorities): a higher number is
    # served first, 0..255 (Celery's ``priority=``, ``task_default_priority``); it becomes the
    # pgmbus message's priority. Redis' transport inverts it; pgmbus does not.
    min_priority = 0
    max_priority = 255
    # Bindings live in the database (kombu_bindings), so a broadcast reaches other processes.
    supports_fanout = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._declared: set[str] = set()
        self._message_ttl: dict[str, float] = {}  # queue -> x-message-ttl in seconds
        self._no_ack: set[str] = set()  # queues consumed without acks (acked on delivery)
        self._quiet_until: dict[str, float] = {}  # no-ack queue -> next look while busy
        # leased in one claim, not yet handed to Kombu, per pgmbus queue
        self._claimed: dict[str, deque[Message]] = {}

    @property
    def bus(self) -> Bus:
        bus: Bus = self.connection.bus
        return bus

    @property
    def keeper(self) -> _LeaseKeeper:
        keeper: _LeaseKeeper = self.connection.keeper
        return keeper

    @property
    def acks(self) -> AckBuffer:
        acks: AckBuffer = self.connection.acks
        return acks

    @property
    def bindings(self) -> Bindings:
        bindings: Bindings = self.connection.bindings
        return bindings

    # --- queues -------------------------------------------------------------------------------

    @_reconnecting
    def _new_queue(self, queue: str, **kwargs: Any) -> None:
        ttl = (kwargs.get("arguments") or {}).get("x-message-ttl")
        if isinstance(ttl, int | float) and ttl > 0:
            self._message_ttl[queue] = ttl / 1000  # Kombu gives it in milliseconds
        name = queue_name(queue)
        if name in self._declared:
            return
        if not any(info.qname == name for info in self.bus.queues()):
            self.bus.create_queue(name)
        self._declared.add(name)

    @_reconnecting
    def _has_queue(self, queue: str, **kwargs: Any) -> bool:
        name = queue_name(queue)
        return any(info.qname == name for info in self.bus.queues())

    @_reconnecting
    def _delete(self, queue: str, *args: Any, **kwargs: Any) -> None:
        name = queue_name(queue)
        self.bindings.unbind_queue(queue)
        if self._has_queue(queue):
            self.bus.drop_queue(name)
        self._declared.discard(name)

    # --- bindings (shared by every process: pgmbus.contrib.kombu_bindings) -------------------

    @_reconnecting
    def _queue_bind(self, exchange: str, routing_key: str, pattern: str | None, queue: str) -> None:
        self.bindings.bind(exchange, routing_key, pattern, queue, self._message_ttl.get(queue))

    @_reconnecting
    def queue_unbind(
        self,
        queue: str,
        exchange: str | None = None,
        routing_key: str = "",
        arguments: Any = None,
        **kwargs: Any,
    ) -> None:
        super().queue_unbind(queue, exchange, routing_key, arguments, **kwargs)
        self.bindings.unbind(exchange or "amq.direct", routing_key, queue)

    @_reconnecting
    def get_table(self, exchange: str) -> list[tuple[str, str | None, str]]:
        # a broadcast must reach every queue bound now (a worker that just started)
        return self.bindings.table(exchange, fresh=self.typeof(exchange).type == "fanout")

    def _lookup(self, exchange: str, routing_key: str, default: Any = None) -> Any:
        if exchange:
            try:
                routed = self.typeof(exchange).lookup(
                    self.get_table(exchange), exchange, routing_key, None
                )
            except KeyError:
                routed = None
            if not routed:
                # bound since the copy was made, by another process (a reply queue)?
                self.bindings.forget(exchange)
        return super()._lookup(exchange, routing_key, default)

    def _put_fanout(
        self, exchange: str, message: dict[str, Any], routing_key: str, **kwargs: Any
    ) -> None:
        """Post a copy to every queue bound to ``exchange`` (in any process)."""
        for queue in sorted({q for _key, _pattern, q in self.get_table(exchange)}):
            self._put(queue, message, **kwargs)

    @_reconnecting
    def _size(self, queue: str) -> int:
        stats = [s for s in self.bus.stats(queue_name(queue)) if s.cname == "default"]
        return stats[0].depth if stats else 0

    @_reconnecting
    def _purge(self, queue: str) -> int:
        # Removes what is ready now (delayed and leased messages stay).
        name = queue_name(queue)
        removed = 0
        while got := self.bus.consume(name, limit=1000):
            removed += len(got)
        return removed

    # --- messages -----------------------------------------------------------------------------

    def _put(self, queue: str, message: dict[str, Any], **kwargs: Any) -> None:
        """Post the message; in the application's open transaction on the broker's database,
        if there is one (see ``pgmbus.contrib.app_transaction``), so it commits with it."""
        name = queue_name(queue)
        with connection_errors():
            self._new_queue(queue)
        expires = self._expiry(queue, message)
        if expires is not None and expires <= datetime.now(UTC):
            log.debug("not posting to %s a message that expired already", queue)
            return
        joined = app_transaction.joining(message, self.connection.broker_identity)
        post = functools.partial(
            self.bus.post,
            name,
            message,
            delayed_until=eta_of(message),
            expires=expires,
            priority=self._get_message_priority(message, reverse=False),
        )
        if joined is not None:
            post(conn=joined)  # its errors are the application's, not a broker to reconnect
            return
        with connection_errors():
            post()

    def _expiry(self, queue: str, message: dict[str, Any]) -> datetime | None:
        """When ``message`` expires in ``queue``: the queue's message TTL (the binding's), or
        a broadcast's ``expires`` header (Kombu's mailbox: seconds since the epoch)."""
        ends = []
        ttl = self._message_ttl.get(queue) or self.bindings.message_ttl(queue)
        if ttl:
            ends.append(datetime.now(UTC) + timedelta(seconds=ttl))
        stated = (message.get("headers") or {}).get("expires")
        if isinstance(stated, int | float) and not isinstance(stated, bool) and stated > 0:
            ends.append(datetime.fromtimestamp(stated, UTC))
        return min(ends, default=None)

    def basic_consume(
        self, queue: str, no_ack: bool, callback: Any, consumer_tag: Any, **kwargs: Any
    ) -> Any:
        if no_ack:
            self._no_ack.add(queue)  # Kombu never acks these: delivered is done
        return super().basic_consume(queue, no_ack, callback, consumer_tag, **kwargs)

    @_reconnecting
    def _get(self, queue: str, timeout: float | None = None) -> dict[str, Any]:
        name = queue_name(queue)
        if name not in self._declared:
            self._new_queue(queue)
        waiting = self._claimed.get(name)
        if not waiting:
            waiting = self._claimed[name] = self._claim_quietly(queue, name)
        message = waiting.popleft()
        if queue in self._no_ack:
            self.acks.add(message)
        payload: dict[str, Any] = dict(message.data)
        properties = payload["properties"]
        info = properties.setdefault("delivery_info", {})
        info["pgmbus_token"] = str(message.lease_token)
        info["pgmbus_iid"] = message.iid
        info["redelivered"] = message.attempts > 1
        payload["redelivered"] = message.attempts > 1
        return payload

    def _claim_quietly(self, queue: str, name: str) -> deque[Message]:
        """Claim; a queue consumed without acks (remote control, events: rare messages)
        found empty is not looked at again for ``_QUIET`` seconds while other queues keep the
        worker busy, so it costs the task loop no query per task. An idle worker looks at
        every queue after each wait."""
        quiet = queue in self._no_ack
        if quiet and monotonic() < self._quiet_until.get(queue, 0.0):
            raise Empty()
        try:
            return self._claim(name)
        except Empty:
            if quiet:
                self._quiet_until[queue] = monotonic() + _QUIET
            raise

    def takes_without_acks(self) -> bool:
        """Whether every queue this channel consumes is consumed without acks."""
        return bool(self._active_queues) and set(self._active_queues) <= self._no_ack

    def look_everywhere(self) -> None:
        """End the quiet time of every queue: the next drain looks at each."""
        self._quiet_until.clear()

    def _claim(self, name: str) -> deque[Message]:
        """Lease as many messages as the consumer may take now (its free prefetch slots; one
        without a prefetch limit) in one query; each is held (its lease kept) from now on.

        A message that is no Kombu envelope can never be delivered: it is buried at once
        (retrying cannot mend it), so it never reaches Celery, whose consumer would die on it,
        and never comes back after its lease. Raises ``Empty`` when nothing good was leased.
        """
        slots = min(self.qos.can_consume_max_estimate() or 1, _MAX_CLAIM)
        buried = 0
        while buried < _MAX_BURIED_PER_GET:
            got = self.bus.lease(
                name,
                limit=max(slots, 1),
                lease=self.connection.visibility_timeout,
                max_attempts=self.connection.max_attempts,
            )
            if not got:
                raise Empty()
            good: deque[Message] = deque()
            for message in got:
                problem = self._not_an_envelope(message.data)
                if problem is None:
                    self.keeper.hold(message)
                    good.append(message)
                    continue
                log.warning("message %s of queue %s is buried: %s", message.iid, name, problem)
                buried += 1
                try:
                    self.bus.bury(message, problem)
                except StaleLease:
                    log.warning("bury of %s came after its lease ended", message.iid)
            if good:
                return good
        raise Empty()  # a run of bad messages: the next drain goes on burying them

    def _give_back(self, names: set[str] | None = None) -> None:
        """Nack the claimed messages not yet delivered (of ``names``, or all): they are
        delivered again at once, to any consumer."""
        for name in list(self._claimed if names is None else names):
            waiting = self._claimed.pop(name, None) or deque()
            for message in waiting:
                if self.keeper.release(message.lease_token) is None:  # type: ignore[arg-type]
                    continue
                try:
                    self.bus.nack(message)
                except StaleLease:
                    pass  # its lease ended: it is back in the queue already
                except (PgmbusError, psycopg.Error, OSError) as exc:
                    log.warning("%s comes back when its lease ends: %s", message.iid, exc)

    def basic_cancel(self, consumer_tag: Any) -> Any:
        """Stop consuming; claimed messages of a queue no longer consumed are given back."""
        queue = self._tag_to_queue.get(consumer_tag)
        result = super().basic_cancel(consumer_tag)
        if queue is not None and queue not in self._active_queues:
            self._give_back({queue_name(queue)})
        return result

    def close(self) -> None:
        """Give back the claimed messages not yet delivered, then close as Kombu does
        (which gives back the delivered, unacknowledged ones)."""
        if not self.closed:
            self._give_back()
        super().close()

    def _not_an_envelope(self, data: Any) -> str | None:
        """Why ``data`` is not a Kombu message envelope Kombu can decode (None if it is)."""
        if not isinstance(data, dict):
            return f"not a Kombu message envelope: the payload is a JSON {type(data).__name__}"
        properties = data.get("properties")
        if not isinstance(properties, dict):
            return "not a Kombu message envelope: no 'properties' object"
        if "delivery_tag" not in properties:
            return "not a Kombu message envelope: no 'properties.delivery_tag'"
        if not isinstance(properties.get("delivery_info", {}), dict):
            return "not a Kombu message envelope: 'properties.delivery_info' is not an object"
        body = data.get("body")
        if not body:
            return None
        encoding = properties.get("body_encoding")
        try:
            decoded = self.decode_body(body, encoding)
        except Exception as exc:  # any codec failure: binascii.Error, KeyError, TypeError
            return f"Kombu message body cannot be decoded as {encoding!r}: {exc!r}"
        headers = data.get("headers")
        compressed = isinstance(headers, dict) and "compression" in headers
        if data.get("content-type") == "application/json" and not compressed:
            # Celery acks (drops) a body it cannot deserialize; bury it instead. Only JSON is
            # parsed here: other serializers (pickle) must not run on an unchecked message, and
            # a compressed body is Kombu's to inflate.
            try:
                json.loads(decoded)
            except (ValueError, TypeError) as exc:
                return f"Kombu message body is not the JSON its content-type says: {exc}"
        return None

    def _held(self, delivery_tag: Any, *, release: bool = True) -> Message | None:
        try:
            info = self.qos.get(delivery_tag).delivery_info
        except KeyError:
            return None
        token = info.get("pgmbus_token")
        if token is None:
            return None
        return self.keeper.release(UUID(token)) if release else self.keeper.get(UUID(token))

    def basic_ack(self, delivery_tag: Any, multiple: bool = False) -> None:
        """Ack the message's lease (it is removed) with the others of this loop turn, in
        one statement (``pgmbus.contrib.kombu_acks``); forget it now."""
        message = self._held(delivery_tag, release=False)
        if message is not None:
            self.acks.add(message)
        super().basic_ack(delivery_tag, multiple)
        self.connection.slot_freed()

    def drain_events(self, timeout: float | None = None, callback: Any = None) -> Any:
        """Deliver one message, when the prefetch leaves room for a claim worth its query."""
        if self._consumers and self.may_take():
            return self._poll(self.cycle, callback or self.connection._deliver, timeout=timeout)
        raise Empty()

    def may_take(self) -> bool:
        """Whether to deliver now: a message claimed already is waiting, or a claim may take
        half the prefetch. The worker's loop waits for each claim's round trip (and for the
        GIL after it, which its pool's threads hold): a worker whose prefetch is still half
        full has work enough, and refills it in one claim instead of one per ack."""
        if not self.qos.can_consume():
            return False
        if any(self._claimed.values()):
            return True
        free = self.qos.can_consume_max_estimate()
        return free is None or free >= max(1, self.qos.prefetch_count // 2)

    @_reconnecting
    def basic_reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        """Requeue: nack (delivered again at once). Otherwise bury it in the dmq."""
        message = self._held(delivery_tag)
        if message is not None:
            try:
                if requeue:
                    self.bus.nack(message)
                else:
                    self.bus.bury(message, "rejected by the consumer")
            except StaleLease:
                self.keeper.lost_lease(message)
        self.qos.reject(delivery_tag, requeue=False)
        self.connection.slot_freed()

    @_reconnecting
    def _restore(self, message: Any) -> None:
        """Give an unacknowledged message back (channel closed, worker stopping): nack it."""
        token = message.delivery_info.get("pgmbus_token")
        held = None if token is None else self.keeper.release(UUID(token))
        if held is None:
            return
        with contextlib.suppress(StaleLease):
            self.bus.nack(held)


class _PostWaiter:
    """Wakes an idle transport when a message is posted to one of its queues.

    While registered (``mbus.await_queue``) on a dedicated connection, posts to those queues
    send a NOTIFY at commit; registration lasts only while the transport is idle, so a busy
    worker costs posters nothing.
    """

    def __init__(self, dsn: str | None) -> None:
        self.dsn = dsn
        self.conn: psycopg.Connection[Any] | None = None
        self.queues: set[str] = set()

    def register(self, queues: set[str]) -> None:
        """Listen to ``queues`` (pgmbus names), and only to them."""
        if self.conn is None:
            self.conn = psycopg.connect(resolve_dsn(self.dsn), autocommit=True)
        for name in sorted(queues - self.queues):
            await_queue(self.conn, name)
            self.queues.add(name)
        self.unregister(self.queues - queues)

    def unregister(self, queues: set[str] | None = None) -> None:
        """Stop listening (to ``queues``, or to all)."""
        for name in sorted(self.queues if queues is None else queues):
            if self.conn is not None:
                await_done(self.conn, name)
            self.queues.discard(name)

    def wait(self, seconds: float) -> None:
        """Return after a notification or ``seconds``."""
        if self.conn is None or seconds <= 0:
            return
        for _note in self.conn.notifies(timeout=seconds, stop_after=1):
            pass

    def close(self) -> None:
        conn, self.conn = self.conn, None
        self.queues.clear()
        if conn is not None:
            conn.close()


class Transport(virtual.Transport):
    """The pgmbus Kombu transport (``pgmbus://``)."""

    Channel = Channel
    can_parse_url = True
    default_port = 5432  # type: ignore[assignment]
    driver_type = "postgresql"
    driver_name = "pgmbus"
    polling_interval = DEFAULT_POLLING_INTERVAL
    implements = virtual.Transport.implements.extend(
        exchange_type=frozenset(["direct", "topic", "fanout"])
    )
    connection_errors = (  # type: ignore[assignment]
        *virtual.Transport.connection_errors,
        psycopg.OperationalError,
        psycopg_pool.PoolTimeout,
    )

    def __init__(self, client: Any, **kwargs: Any) -> None:
        super().__init__(client, **kwargs)
        self._client: Any = client
        options = client.transport_options
        self.visibility_timeout = float(
            options.get("visibility_timeout", DEFAULT_VISIBILITY_TIMEOUT)
        )
        bound = int(options.get("max_attempts", DEFAULT_MAX_ATTEMPTS))
        if bound < 0:
            raise ValueError(f"max_attempts must be >= 0 (0: no bound), not {bound}")
        self.max_attempts: int | None = bound or None
        self._bus: Bus | None = None
        self._keeper: _LeaseKeeper | None = None
        self._acks: AckBuffer | None = None
        self._bindings: Bindings | None = None
        self.ack_delay = float(options.get("ack_delay", DEFAULT_ACK_DELAY))
        self._waiter: _PostWaiter | None = None
        self._broker_identity: tuple[Any, ...] | None = None
        self._slot_freed = threading.Event()
        self._lock = threading.Lock()

    def _dsn(self) -> str | None:
        options = self._client.transport_options
        if options.get("dsn"):
            return str(options["dsn"])
        return dsn_from_url(self._client.hostname)

    @property
    def bus(self) -> Bus:
        with self._lock:
            if self._bus is None:
                pool_size = int(self._client.transport_options.get("pool_size", 4))
                self._bus = Bus(self._dsn(), max_size=pool_size).open()
            return self._bus

    @property
    def keeper(self) -> _LeaseKeeper:
        bus = self.bus
        with self._lock:
            if self._keeper is None:
                self._keeper = _LeaseKeeper(bus, self.visibility_timeout)
            return self._keeper

    @property
    def bindings(self) -> Bindings:
        bus = self.bus
        with self._lock:
            if self._bindings is None:
                self._bindings = Bindings(bus)
            return self._bindings

    @property
    def acks(self) -> AckBuffer:
        keeper = self.keeper
        with self._lock:
            if self._acks is None:
                # a tenth of the lease at most: the keeper extends held leases every third
                self._acks = AckBuffer(
                    keeper.bus, keeper, min(self.ack_delay, self.visibility_timeout / 10)
                )
            return self._acks

    def broker_identity(self, fresh: bool = False) -> tuple[Any, ...]:
        """The broker database's identity (``app_transaction.ask_identity``), asked once."""
        with self._lock:
            known = self._broker_identity
        if known is None or fresh:
            with connection_errors(), self.bus.pool.connection() as conn:
                known = app_transaction.ask_identity(conn)
            with self._lock:
                self._broker_identity = known
        return known

    def establish_connection(self) -> Any:
        with connection_errors():  # fail early when the database is not there
            self.bus.queues()
        return super().establish_connection()

    def _active_queues(self) -> set[str]:
        return {queue_name(q) for ch in self.channels for q in ch._active_queues}

    def drain_events(self, connection: Any, timeout: float | None = None, **kwargs: Any) -> None:
        """Deliver one message; while every queue is empty, wait for a post's NOTIFY (at most
        ``polling_interval`` seconds between looks, for delayed messages coming due)."""
        started = monotonic()
        cycle: Any = self.cycle
        while True:
            try:
                cycle.get(self._deliver, timeout=timeout)
            except Empty:
                pass
            else:
                if self._waiter is not None and self._waiter.queues:
                    self._idle_done()  # busy again: posters need not notify
                return
            remaining = None if timeout is None else timeout - (monotonic() - started)
            if remaining is not None and remaining <= 0:
                raise TimeoutError()
            pause = self.polling_interval
            if remaining is not None:
                pause = min(pause, remaining)
            # Cleared before the look: an ack after it sets it again, so none is missed.
            self._slot_freed.clear()
            if self._prefetch_full():
                # Nothing may be taken until a task is acked (Celery acks from its pool's
                # threads): wait for that, not for posts, which could not be taken anyway;
                # but look at a remote-control mailbox meanwhile (it takes no acks)
                if any(ch.takes_without_acks() for ch in self.channels):
                    pause = min(pause, _QUIET)
                self._slot_freed.wait(pause)
            else:
                self._idle_wait(pause)

    def _prefetch_full(self) -> bool:
        """Whether every channel consuming with acks holds as many unacked messages as it
        may (a remote-control mailbox, consumed without acks, has no prefetch to fill)."""
        acking = [ch for ch in self.channels if ch._consumers and not ch.takes_without_acks()]
        return bool(acking) and not any(ch.may_take() for ch in acking)

    def slot_freed(self) -> None:
        """A message was acked, rejected or given back: a full prefetch has room again."""
        self._slot_freed.set()

    def _idle_wait(self, seconds: float) -> None:
        """Register for the active queues' posts, look once more, then wait."""
        waiter = self._waiter
        if waiter is None:
            waiter = self._waiter = _PostWaiter(self._dsn())
        try:
            with connection_errors():
                fresh = bool(self._active_queues() - waiter.queues)
                waiter.register(self._active_queues())
            if not fresh:
                waiter.wait(seconds)
            # after a wait (or a registration: a post may have committed before it), look at
            # every queue again
            for channel in self.channels:
                channel.look_everywhere()
        except (psycopg.Error, PgmbusError) as exc:
            log.warning("waiting for posts failed (%s); polling instead", exc)
            waiter.close()
            sleep(seconds)

    def _idle_done(self) -> None:
        waiter = self._waiter
        if waiter is None:
            return
        try:
            with connection_errors():
                waiter.unregister()
        except (psycopg.Error, PgmbusError) as exc:
            log.warning("could not stop waiting for posts: %s", exc)
            waiter.close()

    def close_connection(self, connection: Any) -> None:
        try:
            super().close_connection(connection)
        finally:
            with self._lock:
                keeper, self._keeper = self._keeper, None
                acks, self._acks = self._acks, None
                self._bindings = None
                bus, self._bus = self._bus, None
                waiter, self._waiter = self._waiter, None
                self._broker_identity = None
            if waiter is not None:
                waiter.close()
            if acks is not None:
                with contextlib.suppress(PgmbusError, psycopg.Error, OSError):
                    acks.stop()  # what a crash would leave comes back after its lease
            if keeper is not None:
                keeper.stop()
            if bus is not None:
                bus.close()

    def driver_version(self) -> str:
        from pgmbus import __version__

        return __version__
