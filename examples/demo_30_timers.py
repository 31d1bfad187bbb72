"""Timers: scheduled HTTP callbacks through `pgmbus serve` (HTTP API + dispatcher)."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx
from rich.console import Console

console = Console()


class Receiver(BaseHTTPRequestHandler):
    """The demo's callback receiver: /flaky fails twice, /reject rejects, others accept."""

    calls: ClassVar[list[tuple[str, str]]] = []
    flaky_left = 2

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        status, headers = 200, {}
        if self.path == "/flaky" and Receiver.flaky_left > 0:
            Receiver.flaky_left -= 1
            status = 500
        if self.path == "/reject":
            headers["X-Ya-CallMeBack-Notify-Reject"] = "not interested"
        Receiver.calls.append((self.path, str(status)))
        console.print(
            f"  [cyan]receiver[/] {self.path} webhook-id="
            f"{self.headers['webhook-id'][:8]}… attempt {self.headers['pgmbus-attempt']}"
            f" -> {status}{' + reject header' if headers else ''}"
        )
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("content-length", "0")
        self.end_headers()


def pgmbus(*args: str) -> str:
    console.print(f"[dim]$ pgmbus {' '.join(args)}[/]")
    out = subprocess.run(
        [sys.executable, "-m", "pgmbus", *args], check=True, capture_output=True, text=True
    ).stdout
    return out


def run(dsn: str) -> None:
    name = f"demo_{secrets.token_hex(3)}"
    out = pgmbus("timers", "add-client", name, "--dsn", dsn)
    key = next(line.split()[-1] for line in out.splitlines() if line.startswith("api key"))
    console.print(f"client {name}: api key {key[:12]}…")

    receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    target = f"http://127.0.0.1:{receiver.server_address[1]}"

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [
        "serve",
        "--dsn",
        dsn,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--allow-network",
        "127.0.0.1/32",
    ]
    console.print(f"[dim]$ pgmbus {' '.join(args).replace(dsn, repr(dsn))}  (in the background)[/]")
    server = subprocess.Popen([sys.executable, "-m", "pgmbus", *args])
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                if httpx.get(base + "/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.time() > deadline:
                raise RuntimeError("pgmbus serve did not start")
            time.sleep(0.1)
        console.print(f"API up at {base} (OpenAPI at {base}/docs)")
        api = httpx.Client(base_url=base, headers={"authorization": f"Bearer {key}"})
        soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
        later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
        for event, path, when in [
            ("order-1", "/flaky", soon),
            ("order-2", "/reject", soon),
            ("order-3", "/ok", later),
        ]:
            r = api.post(
                "/v1/callbacks",
                json={
                    "group_key": "orders",
                    "event_key": event,
                    "run_at": when,
                    "url": target + path,
                    "context": {"order": event},
                    "retry": {"fast_retries": 2},
                },
            )
            console.print(f"POST /v1/callbacks {event} -> {r.status_code} {r.json()['status']}")
        r = api.post("/v1/callbacks/orders/order-3/cancel")
        console.print(f"POST /v1/callbacks/orders/order-3/cancel -> {r.json()['status']}")
        r = api.post(
            "/v1/schedules",
            json={"schedule_key": "heartbeat", "interval_s": 1, "url": target + "/tick"},
        )
        console.print(f"POST /v1/schedules heartbeat every 1 s -> {r.status_code}")

        deadline = time.time() + 15
        while time.time() < deadline:
            states = {
                e: api.get(f"/v1/callbacks/orders/{e}").json()["status"]
                for e in ("order-1", "order-2")
            }
            ticks = sum(1 for p, _ in Receiver.calls if p == "/tick")
            if "pending" not in states.values() and ticks >= 2:
                break
            time.sleep(0.2)
        api.post("/v1/schedules/heartbeat/pause")
        for e in ("order-1", "order-2", "order-3"):
            cb = api.get(f"/v1/callbacks/orders/{e}").json()
            console.print(f"[bold]{e}[/]: {cb['status']} after {cb['attempts']} attempt(s)")
        hist = api.get("/v1/callbacks/orders/order-1/history").json()
        console.print(
            "order-1 history: "
            + ", ".join(f"{a['outcome']}({a['status_code']})" for a in hist["attempts"])
            + " | changes: "
            + ", ".join(c["action"] for c in hist["changes"])
        )
        ticks = api.get(
            "/v1/callbacks", params={"group_key": "heartbeat", "status": "notified"}
        ).json()["items"]
        console.print(f"schedule 'heartbeat' delivered {len(ticks)} callbacks, then paused")
        api.close()
    finally:
        os.kill(server.pid, signal.SIGTERM)
        server.wait(20)
        receiver.shutdown()
    console.print(pgmbus("timers", "clean", "--ttl-days", "30", "--dsn", dsn).strip())
