"""The command line: add-client, clean, serve (a real process on 127.0.0.1)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import httpx
from typer.testing import CliRunner

from pgmbus.cli import app
from tests.processes import reap, stop, wait_until
from tests.timers.conftest import Env

runner = CliRunner()


def test_add_client_prints_a_working_key(env: Env) -> None:
    result = runner.invoke(app, ["timers", "add-client", "shop", "--dsn", env.dsn, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["api_key"].startswith("pmk_")
    (cid,) = env.sql("SELECT mbus.timer_authenticate(%s)", (doc["api_key"],))[0]
    assert cid == doc["client_id"]
    again = runner.invoke(app, ["timers", "add-client", "shop", "--dsn", env.dsn])
    assert again.exit_code == 1 and "exists" in again.output


def test_clean_uses_the_ttl(env: Env) -> None:
    old = datetime.now(UTC) - timedelta(days=10)
    env.sql(
        "SELECT mbus.timer_create(%s, 'g', 'e', %s, 'http://127.0.0.1:9/', p_now => %s)",
        (env.client.id, old, old),
    )
    env.sql("SELECT mbus.timer_cancel(%s, 'g', 'e', %s)", (env.client.id, old))
    result = runner.invoke(app, ["timers", "clean", "--ttl-days", "30", "--dsn", env.dsn])
    assert result.exit_code == 0 and "deleted 0 callbacks" in result.output
    result = runner.invoke(app, ["timers", "clean", "--ttl-days", "5", "--dsn", env.dsn])
    assert result.exit_code == 0 and "deleted 1 callbacks" in result.output


def test_serve_runs_the_api(env: Env) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pgmbus",
            "serve",
            "--dsn",
            env.dsn,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--allow-network",
            "127.0.0.1/32",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"

        def healthy() -> bool:
            try:
                return httpx.get(base + "/healthz").status_code == 200
            except httpx.TransportError:
                return False

        # a Python start can take tens of seconds on a loaded machine: wait on the process
        wait_until(healthy, proc=proc, what="pgmbus serve answering")
        headers = {"authorization": f"Bearer {env.client.api_key}"}
        r = httpx.post(
            base + "/v1/callbacks",
            headers=headers,
            json={
                "group_key": "g",
                "event_key": "e",
                "url": "https://example.com/x",
                "run_at": (datetime.now(UTC) + timedelta(hours=1)).isoformat(),
            },
        )
        assert r.status_code == 201
        assert httpx.get(base + "/v1/callbacks/g/e", headers=headers).json()["status"] == "pending"
        stop(proc)
    finally:
        reap(proc)
    assert proc.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after exit
    assert env.sql("SELECT count(*) FROM mbus.timer_dispatchers")[0][0] == 0  # released
