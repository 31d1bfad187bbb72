"""What the timers scenarios share: a fast local HTTP target, processes, and a bench client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[2]


class TargetServer:
    """A minimal HTTP/1.1 server (asyncio, keep-alive) on 127.0.0.1 that answers 200 at once
    and records when each callback arrived and when it was due (``run_at`` of its body)."""

    def __init__(self) -> None:
        self.arrivals: list[tuple[float, float]] = []  # (arrived, run_at) as epoch seconds
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> TargetServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/cb"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024)
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()
        handlers = asyncio.all_tasks(self._loop)
        for task in handlers:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*handlers, return_exceptions=True))
        self._loop.run_until_complete(server.wait_closed())
        self._loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = await reader.readexactly(length) if length else b""
                arrived = time.time()
                try:
                    due = datetime.fromisoformat(json.loads(body)["run_at"]).timestamp()
                    self.arrivals.append((arrived, due))
                except (ValueError, KeyError):
                    pass
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def spawn(*args: str) -> subprocess.Popen[bytes]:
    """Start ``python -m <args>`` in the repository root, quietly."""
    return subprocess.Popen(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM the processes, wait, and kill those that do not exit."""
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bench_client(dsn: str) -> tuple[int, str]:
    """The id and API key of the bench's owner client (created on first use)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM mbus.timer_clients WHERE name = 'bench'")
        row = conn.execute("SELECT client_id, api_key FROM mbus.timer_add_client('bench')")
        cid, key = row.fetchone()  # type: ignore[misc]
    return int(cid), str(key)


def reset(dsn: str) -> None:
    """Empty the timers tables between rounds."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "TRUNCATE mbus.timer_attempts, mbus.timer_change_log, mbus.timer_callbacks, "
            "mbus.timer_dispatchers"
        )
        conn.execute("UPDATE mbus.timer_buckets SET owner = NULL, lease_until = NULL")
        conn.execute("VACUUM ANALYZE mbus.timer_callbacks")


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def lateness_extra(arrivals: list[tuple[float, float]]) -> dict[str, Any]:
    late = [(a - d) * 1000 for a, d in arrivals]
    return {
        "p50_ms": round(percentile(late, 0.5), 1),
        "p99_ms": round(percentile(late, 0.99), 1),
        "max_ms": round(max(late), 1) if late else float("nan"),
        "delivered": float(len(arrivals)),
    }
