"""Fixtures of the timers tests: a database with an owner client, scripted HTTP servers."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import psycopg
import pytest

from pgmbus.timers import store_async as store
from pgmbus.timers.netguard import NetworkGuard, parse_networks

T = TypeVar("T")
LOCAL = NetworkGuard(parse_networks(["127.0.0.1/32"]))


def run(coro: Awaitable[T]) -> T:
    """Run a coroutine to completion (tests are synchronous)."""

    async def main() -> T:
        return await coro

    return asyncio.run(main())


@dataclass
class Env:
    """A fresh database with one owner client."""

    dsn: str
    client: store.Client = field(init=False)  # the owner, added by the fixture

    def sql(self, query: str, params: Any = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            cur = conn.execute(query, params)
            return cur.fetchall() if cur.description else []

    def add_client(self, name: str) -> store.Client:
        async def go() -> store.Client:
            async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as c:
                return await store.add_client(c, name)

        return run(go())


@pytest.fixture
def env(db_dsn: str) -> Env:
    """A fresh database with the client ``acme``."""
    e = Env(db_dsn)
    e.client = e.add_client("acme")
    return e


@dataclass
class Reply:
    """One scripted answer: status, headers, and a delay before answering."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    action: Callable[[], None] | None = None  # run when the request arrives


@dataclass
class Received:
    """A request the server received."""

    at: float
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class ScriptedServer:
    """A real HTTP server on 127.0.0.1 answering POSTs from a script, then ``default``."""

    def __init__(self, script: list[Reply] | None = None, default: Reply | None = None) -> None:
        self.script = list(script or [])
        self.default = default or Reply()
        self.received: list[Received] = []
        self.lock = threading.Lock()
        self.by_path: dict[str, list[Reply]] = {}
        self.inflight = 0
        self.max_inflight = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                with outer.lock:
                    outer.received.append(
                        Received(
                            time.time(),
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                        )
                    )
                    queue = outer.by_path.get(self.path, outer.script)
                    reply = queue.pop(0) if queue else outer.default
                    outer.inflight += 1
                    outer.max_inflight = max(outer.max_inflight, outer.inflight)
                if reply.action is not None:
                    reply.action()
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                with outer.lock:
                    outer.inflight -= 1
                try:
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("content-length", "0")
                    self.end_headers()
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def wait_for(self, count: int, timeout: float = 20.0) -> list[Received]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.02)
        raise AssertionError(f"expected {count} requests, got {len(self.received)}")

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def http_server() -> Iterator[Callable[..., ScriptedServer]]:
    """Factory of scripted servers, shut down after the test."""
    servers: list[ScriptedServer] = []

    def factory(script: list[Reply] | None = None, default: Reply | None = None) -> ScriptedServer:
        server = ScriptedServer(script, default)
        servers.append(server)
        return server

    yield factory
    for server in servers:
        server.close()


def wait_until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    """Poll ``predicate`` until it is true (raises after ``timeout``)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")
