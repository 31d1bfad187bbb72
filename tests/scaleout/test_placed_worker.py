"""A worker given the placement home runs handlers on the servers of the map, and follows it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from pgmbus import streams
from pgmbus.devdb import free_port
from pgmbus.errors import ConfigurationError, NotFound
from pgmbus.handlers import App
from pgmbus.queues import Message
from pgmbus.scaleout import Cluster
from pgmbus.scaleout.move import move_queue
from pgmbus.streams import Event
from pgmbus.workers.placed import serve_placed, where

HANDLER = "tests.scaleout.placed_app.order"


def _servers(make_db: Callable[..., str]) -> tuple[str, dict[str, str], Cluster]:
    home = make_db()
    servers = {name: make_db() for name in ("s1", "s2")}
    cluster = Cluster(home, refresh=0.0)
    for name, dsn in servers.items():
        cluster.add_server(name, dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT mbus.create_queue('orders', 1)")
            streams.create_group(conn, "audit", start="beginning")
    return home, servers, cluster


async def _until(check: Callable[[], bool], seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("not reached in time")


def test_handlers_read_every_server_of_the_map_and_follow_it(
    make_db: Callable[..., str],
) -> None:
    home, servers, cluster = _servers(make_db)
    cluster.place("queue", "orders", ["s1"])
    cluster.place("topic", "events", ["s1", "s2"])
    app = App()
    got: list[str] = []
    seen: list[str | None] = []

    @app.handler("orders", poll_interval=0.1)
    def order(message: Message) -> None:
        got.append(message.data["n"])

    @app.stream_handler("audit", batch=10, idle_wait=0.1)
    def audit(conn: psycopg.Connection[Any], event: Event) -> None:
        seen.append(event.key)

    async def scenario() -> None:
        stop = asyncio.Event()
        worker = asyncio.create_task(
            serve_placed(app, home=home, refresh=0.2, stop=stop, grace=2.0, signals=False)
        )
        keys = [f"k{n}" for n in range(20)]
        for key in keys:  # spread over both servers by key hash
            cluster.publish("events", {"k": key}, key=key)
        cluster.post("orders", {"n": "on-s1"})
        await _until(lambda: got == ["on-s1"] and Counter(seen) == Counter(keys))
        # a move to a new server: no restart, no code change; during it, old and new are read
        move = asyncio.create_task(asyncio.to_thread(move_queue, home, "orders", "s2", grace=1.5))
        await _until(lambda: cluster.placement("queue", "orders").moving_to == "s2")
        cluster.post("orders", {"n": "on-s2"})
        assert cluster.dsn_for("orders") == servers["s2"]  # posted to the new server
        await _until(lambda: got == ["on-s1", "on-s2"])
        assert cluster.placement("queue", "orders").moving_to == "s2"  # read during the move
        await move
        cluster.post("orders", {"n": "after"})
        await _until(lambda: got == ["on-s1", "on-s2", "after"])
        stop.set()
        report = await worker
        assert Counter(seen) == Counter(keys)  # exactly once
        names = set(report.streams)
        assert {n.split(" @ ")[1] for n in names} == set(servers.values())

    asyncio.run(scenario())
    cluster.close()


def test_bad_input_raises_typed_errors(make_db: Callable[..., str]) -> None:
    home, _, cluster = _servers(make_db)
    app = App()

    @app.handler("unplaced")
    def nothing(message: Message) -> None:
        raise AssertionError("never called")

    with pytest.raises(NotFound, match="queue 'unplaced' is not placed"):
        asyncio.run(serve_placed(app, home=home, signals=False))
    with pytest.raises(ConfigurationError, match=r"placement home .* is unreachable"):
        asyncio.run(serve_placed(app, home="postgresql://127.0.0.1:1/nowhere", signals=False))
    cluster.close()


def test_the_worker_command_follows_the_map(make_db: Callable[..., str]) -> None:
    """``pgmbus worker module:app --placement-home --health``: a real process, a queue moved
    under it; its one health endpoint names the handler on the server it runs on now."""
    home, servers, cluster = _servers(make_db)
    cluster.place("queue", "orders", ["s1"])
    with psycopg.connect(home, autocommit=True) as conn:
        conn.execute("CREATE TABLE handled (iid text PRIMARY KEY)")
    root = Path(__file__).resolve().parents[2]
    env = os.environ | {"PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}", "PGMBUS_DSN": home}
    port = free_port()
    command = ["worker", "tests.scaleout.placed_app:app", "--placement-home", home]
    command += ["--health", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgmbus", *command, "--placement-refresh", "0.2", "--grace", "2"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def handled() -> set[str]:
        with psycopg.connect(home) as conn:
            return {r[0] for r in conn.execute("SELECT iid FROM handled").fetchall()}

    async def wait_for(iids: set[str]) -> None:
        await _until(lambda: handled() == iids or proc.poll() is not None, 20.0)
        assert handled() == iids, proc.stderr.read() if proc.stderr else ""

    def health() -> tuple[int, dict[str, bool]]:
        answer = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
        return answer.status_code, answer.json()["loops"]

    try:
        first = cluster.post("orders", {"n": 1})
        asyncio.run(wait_for({first}))
        assert health() == (200, {f"{HANDLER} @ {where(servers['s1'])}": True})
        move_queue(home, "orders", "s2", grace=0.5)
        second = cluster.post("orders", {"n": 2})
        assert cluster.dsn_for("orders") == servers["s2"]
        asyncio.run(wait_for({first, second}))  # read on s2, without a restart
        asyncio.run(
            _until(lambda: health() == (200, {f"{HANDLER} @ {where(servers['s2'])}": True}))
        )
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert "worker stopped" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    cluster.close()


def test_the_health_answer_names_servers_without_secrets() -> None:
    dsn = "host=db1.example.org port=6432 dbname=shop user=app password=s3cret"
    assert where(dsn) == "db1.example.org:6432/shop"
    assert where("postgresql://app:s3cret@db2/shop") == "db2:5432/shop"
