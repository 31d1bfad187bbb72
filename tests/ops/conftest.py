"""Fixtures of the HTTP layer tests: a database with the pending ops DDL, a live server, keys."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg
import pytest
import uvicorn

from pgmbus.http import ServiceConfig, create_app

ADMIN_SCOPES = ["queues:write:*", "streams:write:*", "timers:read:*"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``check`` until it is true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)


@dataclass
class Service:
    """A running ``pgmbus serve`` application on 127.0.0.1 and its database."""

    dsn: str
    base: str
    keys: dict[str, str] = field(default_factory=dict)

    def sql(self, query: str, params: Any = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            cur = conn.execute(query, params)
            return cur.fetchall() if cur.description else []

    def value(self, query: str, params: Any = None) -> Any:
        return self.sql(query, params)[0][0]

    def add_key(self, name: str, scopes: list[str]) -> str:
        """Create a client with ``scopes``; returns its API key."""
        key = str(self.value("SELECT api_key FROM mbus.timer_add_client(%s)", (name,)))
        self.sql("SELECT mbus.api_set_scopes(%s, %s)", (name, scopes))
        self.keys[name] = key
        return key

    def client(self, name: str | None = "admin") -> httpx.Client:
        headers = {} if name is None else {"authorization": f"Bearer {self.keys[name]}"}
        return httpx.Client(base_url=self.base, headers=headers, timeout=15)


def start(dsn: str, **settings: Any) -> tuple[str, Callable[[], None]]:
    """Run the application under uvicorn in a thread; returns its base URL and a stopper."""
    config = ServiceConfig(dsn=dsn, **{"run_dispatcher": False, "pool_size": 4, **settings})
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=1,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    # generous: on a loaded machine the first start (imports, pool) can take many seconds
    wait_until(lambda: server.started or not thread.is_alive(), timeout=60)
    assert server.started, "the service did not start (its error is in the log above)"

    def stop() -> None:
        server.should_exit = True
        thread.join(60)
        # a server left running would keep its pool and sockets into the next tests
        assert not thread.is_alive(), "the service did not stop"

    return f"http://127.0.0.1:{port}", stop


@pytest.fixture
def ops_dsn(db_dsn: str) -> str:
    """A fresh database with the schema (one per test: the HTTP tests commit)."""
    return db_dsn


@pytest.fixture
def service(ops_dsn: str) -> Iterator[Service]:
    """A live service with an ``admin`` key (write on queues and streams, every timer)."""
    base, stop = start(ops_dsn)
    svc = Service(ops_dsn, base)
    svc.add_key("admin", ADMIN_SCOPES)
    try:
        yield svc
    finally:
        stop()
