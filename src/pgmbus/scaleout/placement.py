"""The placement map of a bus over several servers, as its clients read it (``Cluster``)."""

from __future__ import annotations

import hashlib
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any

import psycopg

from pgmbus import args
from pgmbus.data.scaleout import SCALEOUT as _Q
from pgmbus.dsn import resolve_dsn
from pgmbus.errors import InvalidArgument, InvalidState, NotFound, QueueMoved, translating
from pgmbus.queues import AsyncBus, Bus
from pgmbus.streams import publish

# Posts re-sent after a refusal naming a new server: a queue moved again meanwhile refuses again
_MOVED_RETRIES = 3


@dataclass(frozen=True)
class Placement:
    """Where a queue or topic lives: its servers, the server it is moving to (a queue), and
    for a topic the hash ``scheme`` of its keys and, during a change of its servers, the
    ``previous`` list."""

    kind: str
    name: str
    servers: tuple[str, ...]
    moving_to: str | None = None
    move_id: str | None = None
    scheme: str = "rendezvous"
    previous: tuple[str, ...] | None = None

    def held(self) -> tuple[str, ...]:
        """Servers that readers following the map leave alone during a change: those gaining
        keys (the added ones; when servers are removed, every server of the new list)."""
        if self.previous is None:
            return ()
        added = tuple(s for s in self.servers if s not in self.previous)
        removed = any(s not in self.servers for s in self.previous)
        return self.servers if removed else added

    def losing(self) -> tuple[str, ...]:
        """Servers whose keys move away in a change: all the old ones when some are added (each
        gives up the keys that now prefer a new one), else the removed ones."""
        if self.previous is None:
            return ()
        if any(s not in self.previous for s in self.servers):
            return self.previous
        return tuple(s for s in self.previous if s not in self.servers)

    def readable(self) -> tuple[str, ...]:
        """Servers a reader following the map reads now (every server holding unread events of
        the topic, minus the held ones: a key's old events are read before its new ones)."""
        every = tuple(dict.fromkeys((*(self.previous or ()), *self.servers)))
        return tuple(s for s in every if s not in self.held())


def key_slot(key: str | bytes, count: int) -> int:
    """The index (0-based) of a key's server among ``count`` for the ``mod`` scheme (topics
    placed before rendezvous hashing): crc32 mod count."""
    return zlib.crc32(_raw(key)) % count


def _raw(key: str | bytes) -> bytes:
    return key.encode("utf-8") if isinstance(key, str) else key


def server_for_key(key: str | bytes, servers: tuple[str, ...], scheme: str = "rendezvous") -> str:
    """The server of a topic key: for ``rendezvous``, the server with the highest 64-bit
    BLAKE2b of (its name, the key), so adding a server moves only the keys that now prefer it
    and removing one moves only its keys; for ``mod``, :func:`key_slot`. The one function
    ``Cluster``, the Spark writer and the workers use."""
    raw = _raw(key)
    if scheme == "mod":
        return servers[key_slot(raw, len(servers))]

    def score(server: str) -> bytes:
        return hashlib.blake2b(server.encode("utf-8") + b"\x00" + raw, digest_size=8).digest()

    return max(servers, key=score)


class Cluster:
    """A bus spread over several PostgreSQL servers, located through a map on a home database.

    The map (``mbus.placement_server``, ``mbus.placement``) says on which server each queue
    lives and over which servers a topic is spread by key hash. A client asks the cluster for
    the DSN or the :class:`~pgmbus.queues.Bus` of a queue, so adding a server or moving a queue
    changes the map, not the code. See docs/scale-out.md.

    Parameters
    ----------
    home:
        The database holding the map (the DSN rule applies).
    refresh:
        Seconds a read of the map is trusted; a queue move waits at least this long after it
        redirects posts (``move_queue(grace=...)``), so clients of a cluster never post to a
        server that is being drained for longer than that.
    """

    def __init__(self, home: str | None = None, *, refresh: float = 5.0) -> None:
        self.home = resolve_dsn(home)
        self.refresh = refresh
        self._lock = threading.Lock()
        self._read_at = float("-inf")
        self._servers: dict[str, str] = {}
        self._map: dict[tuple[str, str], Placement] = {}
        self._buses: dict[str, Bus] = {}

    # --- the map --------------------------------------------------------------------------
    def reload(self) -> None:
        """Read the map from the home database now."""
        with translating(), psycopg.connect(self.home, autocommit=True) as conn:
            servers = {str(n): str(c) for n, c in conn.execute(_Q["servers"]).fetchall()}
            rows = conn.execute(_Q["placements"]).fetchall()
        placed = {
            (str(k), str(n)): Placement(
                str(k), str(n), tuple(s), m, i, str(scheme), None if prev is None else tuple(prev)
            )
            for k, n, s, m, i, scheme, prev in rows
        }
        with self._lock:
            self._servers, self._map = servers, placed
            self._read_at = time.monotonic()

    def _fresh(self) -> None:
        if time.monotonic() - self._read_at >= self.refresh:
            self.reload()

    def servers(self) -> dict[str, str]:
        """The servers of the map: name to conninfo."""
        self._fresh()
        return dict(self._servers)

    def placements(self) -> list[Placement]:
        """Every placement of the map, by kind and name."""
        self._fresh()
        return [self._map[k] for k in sorted(self._map)]

    def placement(self, kind: str, name: str) -> Placement:
        """The placement of one queue or topic; ``NotFound`` when the map does not hold it."""
        args.text("kind", kind)
        args.text("name", name)
        self._fresh()
        found = self._map.get((kind, name))
        if found is None:
            raise NotFound(f"{kind} {name!r} is not placed on any server", sqlstate="MB002")
        return found

    def _dsn(self, server: str) -> str:
        dsn = self._servers.get(server)
        if dsn is None:  # the map was edited between two reads: read it again once
            self.reload()
            dsn = self._servers.get(server)
        if dsn is None:
            raise NotFound(f"server {server!r} is not in the map", sqlstate="MB002")
        return dsn

    # --- where things are -----------------------------------------------------------------
    def dsn_for(self, queue: str) -> str:
        """The DSN posts to ``queue`` go to (its new server while it is being moved)."""
        args.text("queue", queue)
        place = self.placement("queue", queue)
        return self._dsn(place.moving_to or place.servers[0])

    def dsns_to_read(self, queue: str) -> list[str]:
        """The DSNs a consumer of ``queue`` reads: the old server first during a move."""
        place = self.placement("queue", queue)
        names = [place.servers[0]] + ([place.moving_to] if place.moving_to else [])
        return [self._dsn(name) for name in names]

    def topic_dsns(self, topic: str) -> list[str]:
        """The DSNs holding events of a topic: its servers, and during a change of them the
        previous ones too (a batch read reads them all)."""
        place = self.placement("topic", topic)
        names = dict.fromkeys((*place.servers, *(place.previous or ())))
        return [self._dsn(name) for name in names]

    def topic_dsns_to_read(self, topic: str) -> list[str]:
        """The DSNs a reader of the topic's groups reads now (:meth:`Placement.readable`)."""
        return [self._dsn(name) for name in self.placement("topic", topic).readable()]

    def dsn_for_key(self, topic: str, key: str | bytes) -> str:
        """The DSN of the server holding ``key`` of ``topic`` now (:func:`server_for_key`)."""
        args.text("topic", topic)
        if not isinstance(key, bytes):
            args.text("key", key)
        place = self.placement("topic", topic)
        return self._dsn(server_for_key(key, place.servers, place.scheme))

    # --- clients --------------------------------------------------------------------------
    def bus(self, queue: str) -> Bus:
        """An open :class:`~pgmbus.queues.Bus` on the server posts to ``queue`` go to.

        The cluster keeps one bus per server and closes them in :meth:`close`.
        """
        dsn = self.dsn_for(queue)
        with self._lock:
            bus = self._buses.get(dsn)
            if bus is None:
                bus = self._buses[dsn] = Bus(dsn).open()
        return bus

    def async_bus(self, queue: str, **options: Any) -> AsyncBus:
        """A new (unopened) :class:`~pgmbus.queues.AsyncBus` on ``queue``'s server."""
        return AsyncBus(self.dsn_for(queue), **options)

    def post(self, queue: str, data: dict[str, Any], **options: Any) -> str:
        """Post to ``queue`` on its server (:meth:`pgmbus.queues.Bus.post`); returns the iid.

        When the server refuses because the queue has moved (``QueueMoved``: this cluster's
        map is older than the move), the map is read again and the post goes to the new
        server. With ``conn=`` (the caller's transaction, which the refusal aborted) the
        error is raised instead.
        """
        for _ in range(_MOVED_RETRIES):
            refused = self.dsn_for(queue)
            try:
                return self.bus(queue).post(queue, data, **options)
            except QueueMoved:
                if options.get("conn") is not None:
                    raise
                self.reload()
                if self.dsn_for(queue) == refused:  # the map does not say where: no guess
                    raise
        return self.bus(queue).post(queue, data, **options)

    def publish(
        self, topic: str, payload: Any, *, key: str, headers: dict[str, Any] | None = None
    ) -> int:
        """Publish one event on the server of ``key`` (:meth:`dsn_for_key`); returns its id.

        Event ids are per server: (server, id) names an event of a topic spread over several.
        """
        args.text("topic", topic)
        args.json_value("payload", payload)
        args.json_object("headers", headers, optional=True)
        with translating(), psycopg.connect(self.dsn_for_key(topic, key)) as conn:
            return publish(conn, topic, payload, key=key, headers=headers)

    def close(self) -> None:
        """Close the buses the cluster opened."""
        with self._lock:
            buses, self._buses = list(self._buses.values()), {}
        for bus in buses:
            bus.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- editing the map (an administrator's calls) ---------------------------------------
    def _edit(self, query: str, params: dict[str, Any]) -> None:
        with translating(), psycopg.connect(self.home) as conn:
            conn.execute(_Q[query], params)
        self.reload()

    def add_server(self, name: str, conninfo: str) -> None:
        """Add a server (``AlreadyExists``, ``InvalidArgument`` for a password in conninfo)."""
        args.text("name", name)
        args.text("conninfo", conninfo)
        self._edit("add_server", {"name": name, "conninfo": conninfo})

    def drop_server(self, name: str) -> None:
        """Remove a server (``InvalidState`` while something is placed on it)."""
        args.text("name", name)
        self._edit("drop_server", {"name": name})

    def place(self, kind: str, name: str, servers: list[str]) -> None:
        """Place a queue (one server) or a topic (servers by key hash); ``AlreadyExists`` twice."""
        args.text("kind", kind)
        args.text("name", name)
        if isinstance(servers, str):  # a str is a sequence of one-letter names
            raise InvalidArgument("servers must be a list of server names, not a str")
        servers = list(args.texts("servers", servers) or ())
        self._edit("place", {"kind": kind, "name": name, "servers": servers})

    def unplace(self, kind: str, name: str) -> None:
        """Take a name out of the map; ``InvalidState`` while a queue has deliveries there."""
        args.text("kind", kind)
        args.text("name", name)
        if kind == "queue":
            place = self.placement("queue", name)
            if place.moving_to is None:
                pending = pending_on(self._dsn(place.servers[0]), name)
                if pending:
                    raise InvalidState(
                        f"queue {name!r} has {pending} pending deliveries on server "
                        f"{place.servers[0]!r}: drain or move it first",
                        sqlstate="MB008",
                    )
        self._edit("unplace", {"kind": kind, "name": name})


def pending_on(dsn: str, queue: str) -> int:
    """Deliveries of ``queue`` waiting on the server at ``dsn`` (0 when it has no such queue)."""
    with translating(), psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(_Q["depth"], {"queue": queue}).fetchone()
    return int(row[0]) if row else 0
