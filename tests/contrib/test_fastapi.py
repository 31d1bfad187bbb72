"""The FastAPI example under uvicorn: posts commit with the request, or roll back with it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from examples.fastapi_app import setup
from pgmbus.queues import Bus
from tests.processes import reap, stop

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(db_dsn: str) -> Iterator[str]:
    setup(db_dsn)
    port = free_port()
    env = {
        **os.environ,
        "PGMBUS_DSN": db_dsn,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "examples.fastapi_app:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(url + "/docs", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "uvicorn did not start"
                time.sleep(0.1)
        yield url
        stop(proc)
    finally:
        reap(proc)


def state(dsn: str) -> tuple[list[str], list[dict[str, object]]]:
    with psycopg.connect(dsn) as conn:
        items = [r[0] for r in conn.execute("SELECT item FROM orders ORDER BY id").fetchall()]
    with Bus(dsn) as bus:
        messages = [m.data for m in bus.consume("orders", limit=10)]
    return items, messages


def test_a_post_commits_with_the_request_and_rolls_back_when_the_handler_raises(
    server: str, db_dsn: str
) -> None:
    ok = httpx.post(server + "/orders", json={"item": "book", "quantity": 2})
    assert ok.status_code == 201
    body = ok.json()
    with Bus(db_dsn) as bus:
        assert bus.peek("orders", body["message"])  # there as soon as the response is
    failed = httpx.post(server + "/orders?fail=true", json={"item": "lamp"})
    assert failed.status_code == 402 and "rolls back" in failed.json()["error"]
    items, messages = state(db_dsn)
    assert items == ["book"]
    assert messages == [{"order": body["order"], "item": "book", "quantity": 2}]
