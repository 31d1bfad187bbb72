"""Timers workloads of the chaos suite: a creator, a dispatcher and a local HTTP receiver."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pgmbus.reconnect import Backoff, is_transient
from pgmbus.testing.chaos import History
from pgmbus.testing.chaos.history import Unknown
from pgmbus.timers.dispatcher import Dispatcher, DispatcherConfig
from pgmbus.timers.netguard import NetworkGuard, parse_networks
from tests.chaos.workloads import Workload, _pause

LOCAL = NetworkGuard(parse_networks(["127.0.0.1/32"]))
CREATE = "SELECT created FROM mbus.timer_create(%s, 'chaos', %s, clock_timestamp(), %s, %s, %s)"
RETRY = {"kind": "constant", "delay_s": 0.2}


class Receiver:
    """An HTTP server on 127.0.0.1 that answers 200 and remembers the ``v`` of every call, in
    arrival order (the final state the checker reads: a remote service's log)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.times: list[float] = []  # time.monotonic() of each call
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"] or 0)))
                with outer.lock:
                    outer.calls.append(str(body["context"]["v"]))
                    outer.times.append(time.monotonic())
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def max_gap(self, before: float) -> float:
        """The longest time between two calls received before ``before`` (monotonic)."""
        with self.lock:
            times = [t for t in self.times if t < before]
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def add_client(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT client_id FROM mbus.timer_add_client('chaos')").fetchone()
    assert row is not None
    return int(row[0])


class TimerCreator(Workload):
    """Create callbacks due now (event key ``<name>-<n>``, context ``{"v": "<name>/<n>"}``); an
    unknown outcome is retried with the same key (creation is idempotent on the key)."""

    def __init__(
        self,
        history: History,
        workload: str,
        name: str,
        dsn: str,
        client_id: int,
        url: str,
        *,
        max_ops: int,
        rate: float = 60.0,
        tries: int = 20,
    ) -> None:
        super().__init__(name)
        self.history, self.workload, self.dsn = history, workload, dsn
        self.client_id, self.url = client_id, url
        self.max_ops, self.rate, self.tries = max_ops, rate, tries

    def body(self) -> None:
        backoff = Backoff(cap=1.0)
        conn: psycopg.Connection[Any] | None = None
        for seq in range(1, self.max_ops + 1):
            if self.stop_event.is_set():
                break
            value = f"{self.name}/{seq}"
            for _ in range(self.tries):
                while conn is None or conn.closed:
                    if self.stop_event.is_set():
                        return
                    try:
                        conn = psycopg.connect(self.dsn, autocommit=True)
                    except psycopg.OperationalError:
                        _pause(self.stop_event, backoff)
                ok = False
                try:
                    with self.history.op(self.workload, self.name, "enqueue", value):
                        try:
                            conn.execute(
                                CREATE,
                                (
                                    self.client_id,
                                    value.replace("/", "-"),
                                    self.url,
                                    Jsonb({"v": value}),
                                    Jsonb(RETRY),
                                ),
                            )
                        except Exception as exc:
                            if is_transient(exc):
                                raise Unknown("create") from exc
                            raise
                        ok = True
                except Exception as exc:
                    if not is_transient(exc):
                        raise
                if ok:
                    backoff.reset()
                    break
                conn.close()
                _pause(self.stop_event, backoff)
            time.sleep(1.0 / self.rate)
        if conn is not None:
            conn.close()


class DispatcherThread(Workload):
    """A timers dispatcher (the one ``pgmbus dispatcher`` runs) in a thread of its own."""

    def __init__(self, workload: str, dsn: str) -> None:
        super().__init__(f"{workload}-dispatcher")
        self.dsn = dsn
        self.config = DispatcherConfig(
            concurrency=8,
            timeout_s=2.0,
            poll_interval_s=0.05,
            bucket_lease_s=2.0,
            claim_slack_s=1.0,
            schedules=False,
            fast_retry_delay_s=0.01,
            record_interval_s=0.01,
            name="chaos-dispatcher",
        )
        self.dispatcher: Dispatcher | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_async: asyncio.Event | None = None

    def body(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_async = asyncio.Event()
        self.dispatcher = Dispatcher(self.dsn, self.config, LOCAL)
        await self.dispatcher.run(self._stop_async)

    def stop(self, timeout: float = 30.0) -> None:
        if self._loop is not None and self._stop_async is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the thread has ended
                self._loop.call_soon_threadsafe(self._stop_async.set)
        super().stop(timeout)
