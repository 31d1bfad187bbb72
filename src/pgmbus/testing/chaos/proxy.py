"""A TCP proxy between PostgreSQL clients and the server that cuts, stalls and drops replies.

The proxy runs an asyncio loop in a thread of its own and forwards whole protocol messages, so
it can cut a connection between any two messages and recognise a client's ``COMMIT``: with
``ambiguous_commit`` it lets the server commit, then drops the server's reply up to and
including ReadyForQuery and closes both sides. The client sees a broken connection and cannot
know whether its transaction committed (an *ambiguous commit*); the server did commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import struct
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

log = logging.getLogger("pgmbus.testing.chaos")

_SSL_REQUEST = 80877103
_GSSENC_REQUEST = 80877104
_COMMIT_WORDS = (b"COMMIT", b"END")
T = TypeVar("T")


@dataclass
class ProxyStats:
    """What the proxy did to the traffic."""

    connections: int = 0
    refused: int = 0
    random_cuts: int = 0
    cut_all: int = 0
    ambiguous_commits: int = 0
    ambiguous_statements: int = 0
    stalls: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counters by name."""
        return dict(self.__dict__)


@dataclass
class ProxySettings:
    """Fault rates, read by the proxy's loop on every message (change them at any time).

    Attributes
    ----------
    random_cut:
        Probability of cutting the connection before forwarding a message (either direction).
    ambiguous_commit:
        Probability that a client's ``COMMIT`` is forwarded and its reply dropped (then cut).
    ambiguous_statement:
        The same for any other statement (a simple Query or an extended-protocol Sync): in
        autocommit mode the statement's commit is then ambiguous.
    refuse:
        Close new connections at once (the server looks down).
    """

    random_cut: float = 0.0
    ambiguous_commit: float = 0.0
    ambiguous_statement: float = 0.0
    refuse: bool = False


def _is_commit(kind: bytes, body: bytes) -> bool:
    """Tell whether a client message runs COMMIT (simple Query or Parse of the statement)."""
    if kind == b"Q":
        text = body.split(b"\0", 1)[0]
    elif kind == b"P":
        parts = body.split(b"\0", 2)
        text = parts[1] if len(parts) > 1 else b""
    else:
        return False
    return text.strip().rstrip(b";").strip().upper() in _COMMIT_WORDS


@dataclass(eq=False)
class _Link:
    """One proxied connection."""

    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    drop_reply: str | None = None  # 'commit' or 'statement': drop the next reply and cut
    awaiting_commit_sync: bool = False
    # what the server answers during startup: a byte per SSL/GSS request, then typed messages
    startup: asyncio.Queue[bool] = field(default_factory=asyncio.Queue)
    closed: bool = False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for writer in (self.client, self.server):
            with contextlib.suppress(Exception):
                writer.transport.abort()  # a reset, as when a network path dies


class ChaosProxy:
    """Forward 127.0.0.1:``port`` to ``upstream`` with faults on demand.

    Parameters
    ----------
    upstream_port:
        The server's port on ``upstream_host``.
    seed:
        Seed of the random choices (random cuts, ambiguous commits), for reproducible runs.

    Use it as a context manager or call :meth:`start` and :meth:`stop`; :meth:`dsn` rewrites a
    libpq DSN to go through the proxy.
    """

    def __init__(
        self, upstream_port: int, *, upstream_host: str = "127.0.0.1", seed: int = 0
    ) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.settings = ProxySettings()
        self.stats = ProxyStats()
        self.port = 0
        self._rng = random.Random(seed)  # noqa: S311 - reproducible faults, not secrets
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._flowing = asyncio.Event()  # created unbound; used only on the proxy's loop
        self._flowing.set()

    # --- life cycle (called from any thread) ---------------------------------------------------

    def start(self) -> ChaosProxy:
        """Listen on a free port of 127.0.0.1 (``self.port``) and start forwarding."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._thread = threading.Thread(target=loop.run_forever, name="chaos-proxy", daemon=True)
        self._thread.start()
        self._call(self._listen(), timeout=10)
        return self

    def stop(self) -> None:
        """Close every connection and the listener, and end the proxy's thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(Exception):
            self._call(self._shutdown(), timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        self._loop = None
        self._thread = None

    def __enter__(self) -> ChaosProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def dsn(self, dsn: str) -> str:
        """``dsn`` with host and port pointing at the proxy."""
        from psycopg.conninfo import make_conninfo

        return make_conninfo(dsn, host="127.0.0.1", port=str(self.port))

    # --- faults (called from any thread) -----------------------------------------------------

    def cut_all(self) -> int:
        """Reset every open connection now; returns how many were cut."""
        return self._call(self._cut_all(), timeout=10)

    def stall(self) -> None:
        """Stop forwarding in both directions (connections stay open) until :meth:`resume`."""
        loop = self._require_loop()
        self.stats.stalls += 1
        loop.call_soon_threadsafe(self._set_flowing, False)

    def resume(self) -> None:
        """Forward again after :meth:`stall`."""
        loop = self._require_loop()
        loop.call_soon_threadsafe(self._set_flowing, True)

    @property
    def open_connections(self) -> int:
        """Connections open through the proxy now."""
        return len(self._links)

    # --- internals ---------------------------------------------------------------------------

    def _require_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("the proxy is not started")
        return self._loop

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        loop = self._require_loop()
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    def _set_flowing(self, flowing: bool) -> None:
        if flowing:
            self._flowing.set()
        else:
            self._flowing.clear()

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._cut_all()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=5)
        if self._server is not None:
            await self._server.wait_closed()

    async def _cut_all(self) -> int:
        links = list(self._links)
        for link in links:
            link.close()
        if links:
            self.stats.cut_all += 1
        return len(links)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.settings.refuse:
            self.stats.refused += 1
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            self.stats.refused += 1
            writer.transport.abort()
            return
        self.stats.connections += 1
        link = _Link(client=writer, server=up_writer)
        self._links.add(link)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            await asyncio.gather(
                self._pump_client(link, reader), self._pump_server(link, up_reader)
            )
        finally:
            link.close()
            self._links.discard(link)

    async def _gate(self, link: _Link) -> bool:
        """Wait while stalled; then tell whether the link is still open."""
        if not self._flowing.is_set():
            await self._flowing.wait()
        return not link.closed

    def _maybe_cut(self, link: _Link) -> bool:
        rate = self.settings.random_cut
        if rate > 0 and self._rng.random() < rate:
            self.stats.random_cuts += 1
            link.close()
            return True
        return False

    async def _pump_client(self, link: _Link, reader: asyncio.StreamReader) -> None:
        """Client to server: startup packets (no type byte), then typed messages."""
        try:
            while not link.closed:  # startup phase
                head = await reader.readexactly(8)
                length, code = struct.unpack("!ii", head)
                rest = await reader.readexactly(length - 8)
                if not await self._gate(link):
                    return
                link.server.write(head + rest)
                one_byte_answer = code in (_SSL_REQUEST, _GSSENC_REQUEST)
                link.startup.put_nowait(one_byte_answer)
                if not one_byte_answer:
                    break
            while not link.closed:
                head = await reader.readexactly(5)
                kind = head[:1]
                (length,) = struct.unpack("!i", head[1:])
                body = await reader.readexactly(length - 4)
                if not await self._gate(link) or self._maybe_cut(link):
                    return
                self._mark(link, kind, body)
                link.server.write(head + body)
                await link.server.drain()
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            link.close()
            link.startup.put_nowait(False)  # a server pump still in startup goes on, and ends

    def _mark(self, link: _Link, kind: bytes, body: bytes) -> None:
        """Decide whether the reply to this client message is dropped."""
        if link.drop_reply is not None:
            return
        if _is_commit(kind, body):
            if kind == b"Q":
                if self._rng.random() < self.settings.ambiguous_commit:
                    link.drop_reply = "commit"
            else:
                link.awaiting_commit_sync = True  # Parse of COMMIT: its Sync ends it
            return
        if kind == b"S" and link.awaiting_commit_sync:
            link.awaiting_commit_sync = False
            if self._rng.random() < self.settings.ambiguous_commit:
                link.drop_reply = "commit"
            return
        rate = self.settings.ambiguous_statement
        if kind in (b"Q", b"S") and rate > 0 and self._rng.random() < rate:
            link.drop_reply = "statement"

    async def _pump_server(self, link: _Link, reader: asyncio.StreamReader) -> None:
        """Server to client: one-byte answers to SSL/GSS requests, then typed messages."""
        try:
            while await link.startup.get():
                byte = await reader.readexactly(1)
                if not await self._gate(link):
                    return
                link.client.write(byte)
            while not link.closed:
                head = await reader.readexactly(5)
                kind = head[:1]
                (length,) = struct.unpack("!i", head[1:])
                body = await reader.readexactly(length - 4)
                if link.drop_reply is not None:
                    # The server has the statement; hold its reply back and cut once the
                    # server is done with it (ReadyForQuery): it committed, the client
                    # cannot know.
                    if kind == b"Z":
                        if link.drop_reply == "commit":
                            self.stats.ambiguous_commits += 1
                        else:
                            self.stats.ambiguous_statements += 1
                        link.close()
                        return
                    continue
                if not await self._gate(link) or self._maybe_cut(link):
                    return
                link.client.write(head + body)
                await link.client.drain()
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            link.close()
