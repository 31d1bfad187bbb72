"""What the timers scenarios share: a fast local HTTP target, processes, and a bench client."""

from __future__ import annotations

import asyncio
import contextlib
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


class _Receiver(asyncio.Protocol):
    """HTTP/1.1 with keep-alive, parsed just enough: headers, content-length, the body's
    ``run_at``; every request is answered 200 at once."""

    def __init__(self, arrivals: list[tuple[float, float]], open_: set[_Receiver]) -> None:
        self.arrivals = arrivals
        self.open = open_
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.open.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.open.discard(self)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].lower()
            at = head.find(b"content-length:")
            length = (
                int(
                    head[
                        at + 15 : head.find(b"\r\n", at)
                        if head.find(b"\r\n", at) > 0
                        else len(head)
                    ]
                )
                if at >= 0
                else 0
            )
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            arrived = time.time()
            at = body.find(b'"run_at":"')
            if at >= 0:
                value = body[at + 10 : body.find(b'"', at + 10)].decode()
                self.arrivals.append((arrived, datetime.fromisoformat(value).timestamp()))
            assert self.transport is not None
            self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")


class TargetServer:
    """A minimal HTTP server (asyncio protocol, keep-alive) on 127.0.0.1 that answers 200 at
    once and records when each callback arrived and when it was due (``run_at`` of its body)."""

    def __init__(self) -> None:
        self.arrivals: list[tuple[float, float]] = []  # (arrived, run_at) as epoch seconds
        self.port = 0
        self._open: set[_Receiver] = set()
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
            self._loop.create_server(
                lambda: _Receiver(self.arrivals, self._open), "127.0.0.1", 0, backlog=1024
            )
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()
        for receiver in list(self._open):
            if receiver.transport is not None:
                receiver.transport.close()
        self._loop.run_until_complete(asyncio.sleep(0.05))  # let the transports close
        self._loop.run_until_complete(server.wait_closed())
        self._loop.close()

    def cpu_s(self) -> float:
        """CPU seconds the server's thread has used."""
        if self._thread.ident is None or not self._thread.is_alive():
            return 0.0
        return time.clock_gettime(time.pthread_getcpuclockid(self._thread.ident))

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


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds a live process has used so far (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


def server_pids(dsn: str) -> list[int]:
    """The postmaster of ``dsn``'s server and all its children (backends, walwriter...)."""
    with psycopg.connect(dsn) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]  # type: ignore[index]
        # read while the backend lives: once the connection closes, its /proc entry goes
        postmaster = _parent_of(backend)
    pids = [postmaster]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if _parent_of(int(entry)) == postmaster:
                    pids.append(int(entry))
    return pids


class CpuMeter:
    """CPU seconds used by groups of processes (and the target server's thread) over a span.

    Processes that start or end inside the span are counted only for the part seen, so the
    numbers are a floor; the long-lived ones (dispatchers, their backends) dominate.
    """

    def __init__(self, dsn: str, groups: dict[str, list[int]], server: TargetServer) -> None:
        self.dsn = dsn
        self.groups = groups
        self.server = server
        self._start: dict[str, float] = {}
        self.started_at = 0.0

    def _sample(self) -> dict[str, float]:
        groups = dict(self.groups, postgres=server_pids(self.dsn))
        sample = {k: sum(process_cpu_s(p) for p in pids) for k, pids in groups.items()}
        sample["target"] = self.server.cpu_s()
        return sample

    def start(self) -> None:
        self._start = self._sample()
        self.started_at = time.time()

    def restart(self, group: str) -> None:
        """Count ``group`` from now on only (the server's CPU after the inserts, while the
        dispatchers are counted from before them: on a loaded machine the inserts can end
        after the first callbacks are due, and calls made meanwhile must count)."""
        self._start[group] = self._sample()[group]

    def per_call(self, calls: int) -> dict[str, float]:
        """CPU milliseconds per call of each group since ``start``, and the load average."""
        end = self._sample()
        out = (
            {
                f"cpu_ms_per_call_{k}": round(1000 * (end[k] - self._start.get(k, 0.0)) / calls, 3)
                for k in end
            }
            if calls
            else {}
        )
        out["load1"] = round(os.getloadavg()[0], 2)
        return out


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
