"""Keep-alive HTTP/1.1 connections for the dispatcher's calls, pooled per target.

A call is one write of the request's bytes and one response parsed by httptools (llhttp, in C):
httpx's layers (anyio, httpcore, h11, its URL and header models) took most of the dispatcher's
CPU per call. Only what a callback needs is here: POST with a body, a response's status and
headers, its body counted (up to a bound) and dropped. Timeouts are the caller's: a call that
is cancelled closes its connection.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass
from typing import cast

import httptools

# Response head bytes (status line and headers) read at most: a target that never ends its head
# would otherwise grow the parser's buffers (by copies) and the header dict until the timeout.
MAX_HEAD = 64 * 1024


class HTTPError(Exception):
    """The exchange failed: the connection closed early or the response could not be parsed."""


class ConnectionClosed(HTTPError):
    """The connection closed before a whole response came."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a connection goes: scheme, checked address, port, TLS server name."""

    scheme: str
    address: str
    port: int
    server_name: str  # SNI and certificate name (https); the Host header's name


class Response:
    """A response: its status, headers (names in lower case) and body size (not kept)."""

    __slots__ = ("headers", "size", "status_code", "truncated")

    def __init__(self) -> None:
        self.status_code = 0
        self.headers: dict[str, str] = {}
        self.size = 0
        self.truncated = False  # the body went past the bound: the rest was not read


class _Connection(asyncio.Protocol):
    """One connection: exchanges run one at a time; the parser calls back into it."""

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.response = Response()
        self.waiter: asyncio.Future[Response] | None = None
        self.closed = False
        self.reusable = False
        self.received = False  # any byte of the current response came
        self.head_size = 0  # bytes of the current response fed while its head was incomplete

    # -- transport callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream's, from create_connection

    def data_received(self, data: bytes) -> None:
        self.received = True
        if self.waiter is None or self.waiter.done():
            self.close()  # bytes nobody asked for: the connection cannot be trusted again
            return
        try:
            self.parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            # an upgrade (101) is no answer to a callback either
            self._fail(HTTPError(f"invalid HTTP response: {exc!r}"))
            return
        if not self.response.status_code:  # the head is still incomplete after all of data
            self.head_size += len(data)
            if self.head_size > MAX_HEAD:
                self._fail(HTTPError(f"response headers longer than {MAX_HEAD} bytes"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        response = self.response
        if self.waiter is not None and not self.waiter.done():
            if response.status_code and not self.parser.should_keep_alive():
                # a body delimited by the end of the connection: it has ended
                self.waiter.set_result(response)
            else:
                self._fail(ConnectionClosed("connection closed before a whole response"))

    # -- parser callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.response.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.response.status_code = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        response = self.response
        response.size += len(body)
        if response.size > self.max_body:
            response.truncated = True
            self._finish(reusable=False)

    def on_message_complete(self) -> None:
        self._finish(reusable=self.parser.should_keep_alive())

    # -- exchanges
    async def exchange(self, data: bytes) -> Response:
        if self.transport is None or self.closed:
            raise ConnectionClosed("connection closed before the request")
        self.response = Response()
        self.received = False
        self.head_size = 0
        self.reusable = False
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return await self.waiter

    def _finish(self, *, reusable: bool) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.reusable = reusable
            self.waiter.set_result(self.response)

    def _fail(self, exc: Exception) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class Pool:
    """Idle keep-alive connections by origin, taken last-in first-out.

    Parameters
    ----------
    tls:
        The context of https connections (certificates checked against the server name).
    max_idle:
        Idle connections kept per origin; more are closed when their call ends.
    max_body:
        Response body bytes read at most; past it the connection is closed.
    idle_s:
        Idle connections older than this are closed by :meth:`sweep`.
    """

    def __init__(
        self,
        tls: ssl.SSLContext,
        *,
        max_idle: int = 64,
        max_body: int = 1 << 20,
        idle_s: float = 30.0,
    ) -> None:
        self.tls = tls
        self.max_idle = max_idle
        self.max_body = max_body
        self.idle_s = idle_s
        # origin -> (idle since, connection), the most recently used last
        self._idle: dict[Origin, list[tuple[float, _Connection]]] = {}

    async def post(self, origin: Origin, head: bytes, body: bytes) -> Response:
        """Send ``head`` (request line and headers, ending with the blank line) and ``body``
        on a kept-alive connection (else a new one) and read the response."""
        data = head + body
        conn = self._take(origin)
        if conn is not None:
            try:
                return await self._exchange(origin, conn, data)
            except ConnectionClosed:
                if conn.received:
                    raise
                # the server closed it while idle (its keep-alive ended): the request never
                # got an answer on it; sent again on a new connection, as clients do
        return await self._exchange(origin, await self._connect(origin), data)

    async def _exchange(self, origin: Origin, conn: _Connection, data: bytes) -> Response:
        kept = False
        try:
            response = await conn.exchange(data)
            if conn.reusable and not conn.closed:
                kept = self._put(origin, conn)
            return response
        finally:
            if not kept:
                conn.close()  # cancelled (timeout), failed, or not to be reused

    async def _connect(self, origin: Origin) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = self.tls if origin.scheme == "https" else None
        _transport, conn = await loop.create_connection(
            lambda: _Connection(self.max_body),
            origin.address,
            origin.port,
            ssl=tls,
            server_hostname=origin.server_name if tls is not None else None,
        )
        return conn

    def _take(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()[1]
            if not conn.closed:
                return conn
        return None

    def _put(self, origin: Origin, conn: _Connection) -> bool:
        idle = self._idle.setdefault(origin, [])
        if len(idle) >= self.max_idle:
            return False
        idle.append((time.monotonic(), conn))
        return True

    def sweep(self) -> None:
        """Close the connections idle for more than ``idle_s`` (and forget closed ones)."""
        horizon = time.monotonic() - self.idle_s
        for origin, idle in list(self._idle.items()):
            keep = []
            for since, conn in idle:
                if conn.closed or since < horizon:
                    conn.close()
                else:
                    keep.append((since, conn))
            if keep:
                self._idle[origin] = keep
            else:
                del self._idle[origin]

    def close(self) -> None:
        """Close every idle connection."""
        for idle in self._idle.values():
            for _since, conn in idle:
                conn.close()
        self._idle.clear()
