"""Exactly once between two servers under kill -9 of the mover and of a server.

Two embedded clusters, routes both ways between a database on each, a producer posting on the
first while the movers (``pgmbus bridge`` subprocesses) are killed with SIGKILL at random
points and restarted, and the second server (destination of one route, source of the other) is
killed with SIGKILL and restarted (if it comes back on a new port, mbus.alter_link tells the
link). A checker then reads every message on both sides: 0 lost, 0 duplicated, seenby and
source_db exact, the route's order kept.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from pgmbus import schema
from pgmbus.devdb import DevCluster
from pgmbus.exchange import Bridge

Conn = psycopg.Connection[Any]


@dataclass
class Node:
    """One server with one pgmbus database on it."""

    cluster: DevCluster
    dbname: str

    @property
    def dsn(self) -> str:
        return self.cluster.dsn(self.dbname)

    def connect(self) -> Conn:
        conn = psycopg.connect(self.dsn, autocommit=True)
        conn.execute("SET synchronous_commit = on")
        return conn

    def kill9(self) -> None:
        pid = self.cluster.status().pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)

    def restart(self) -> bool:
        """Start the server again; return whether it came back on another port.

        A server killed with SIGKILL leaves connections in TIME_WAIT on its port; the embedded
        manager of this branch then picks a new port (the faults branch makes it wait for the
        same one). Either way the test goes on: a moved server is what mbus.alter_link is for.
        """
        port = self.cluster.port
        self.cluster.start()
        return self.cluster.port != port


def _node(letter: str) -> Node:
    home = Path(tempfile.mkdtemp(prefix=f"pgmbus-exchange-{letter}-"))
    home.chmod(0o755)
    cluster = DevCluster(home, ephemeral=True)
    cluster.start()
    dbname = f"bus_{letter}_{os.getpid()}"  # database names are unique across the exchange
    with psycopg.connect(cluster.dsn("postgres"), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    node = Node(cluster, dbname)
    with psycopg.connect(node.dsn) as conn:
        schema.install(conn)
    return node


def _nodes(letters: str) -> Iterator[list[Node]]:
    made: list[Node] = []
    try:
        for letter in letters:
            made.append(_node(letter))
        yield made
    finally:
        for node in made:
            node.cluster.destroy()
            shutil.rmtree(node.cluster.home, ignore_errors=True)


@pytest.fixture
def nodes() -> Iterator[list[Node]]:
    """Two servers, one pgmbus database on each."""
    yield from _nodes("ab")


@pytest.fixture
def three_nodes() -> Iterator[list[Node]]:
    """Three servers, one pgmbus database on each."""
    yield from _nodes("abc")


class Mover:
    """A ``pgmbus bridge`` subprocess that can be killed and started again."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.proc: subprocess.Popen[bytes] | None = None
        self.kills = 0
        self.starts = 0
        self.killable_at = 0.0

    def start(self, rng: random.Random) -> None:
        """Half the starts run ``pgmbus bridge``, half the slow mover (pauses between commits)."""
        self.starts += 1
        argv = [sys.executable, "-m", "pgmbus", "bridge", "--dsn", self.node.dsn]
        argv += ["--batch", "10", "--poll", "0.02"]
        if self.starts % 2 == 0:
            argv = [sys.executable, str(Path(__file__).with_name("slow_mover.py")), self.node.dsn]
        # Python needs about a second to start here: kill once it works, at a random point.
        self.killable_at = time.monotonic() + 1.2 + rng.uniform(0.0, 1.0)
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        self.kills += 1

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class Producer:
    """Posts numbered messages on a server that never fails; remembers what committed."""

    node: Node
    committed: list[int] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with self.node.connect() as conn:
            n = 0
            while not self.stop.is_set():
                ns = list(range(n + 1, n + 6))
                conn.execute(
                    "SELECT mbus.post('orders', jsonb_build_object('origin', 0, 'n', n)) "
                    "FROM unnest(%s::int[]) AS n",
                    (ns,),
                )
                self.committed += ns
                n = ns[-1]
                time.sleep(0.005)


def _messages(conn: Conn) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    rows = conn.execute(
        "SELECT iid, headers, data FROM mbus.consumen('orders', 'default', 1000000)"
    ).fetchall()
    return [(str(r[0]), r[1], r[2]) for r in rows]


def _pending(conn: Conn, route: str) -> int:
    with conn.transaction(force_rollback=True):
        row = conn.execute("SELECT jsonb_array_length(mbus.exchange_take(%s, 1000000))", (route,))
        got = row.fetchone()
    return int(got[0]) if got else 0


def _chaos(seconds: float, server_kills: int, seed: int, nodes: list[Node]) -> dict[str, int]:
    """Routes around the ring of nodes (two nodes: both ways), faults, then the checker.

    The producer posts on node 0 (never killed), node 1 starts with 400 messages of its own,
    node 1 is the server killed (destination of node 0's route, source of its own).
    """
    rng = random.Random(seed)
    size = len(nodes)
    for i, node in enumerate(nodes):
        with node.connect() as conn:
            conn.execute("SELECT mbus.create_queue('orders', 1)")
            conn.execute("SELECT mbus.create_link('next', %s)", (nodes[(i + 1) % size].dsn,))
            conn.execute("SELECT mbus.create_route('onward', 'next', 'orders', 'orders')")
    with nodes[1].connect() as conn:
        conn.execute(
            "SELECT mbus.post('orders', jsonb_build_object('origin', 1, 'n', n)) "
            "FROM generate_series(1, 400) AS n"
        )
    producer = Producer(nodes[0])
    thread = threading.Thread(target=producer.run, daemon=True)
    movers = [Mover(node) for node in nodes]
    for mover in movers:
        mover.start(rng)
    thread.start()
    kill_server_at = sorted(rng.uniform(0.2, 0.8) * seconds for _ in range(server_kills))
    start = time.monotonic()
    server_killed = moved = 0
    try:
        while (elapsed := time.monotonic() - start) < seconds:
            time.sleep(rng.uniform(0.02, 0.2))
            if kill_server_at and elapsed >= kill_server_at[0]:
                kill_server_at.pop(0)
                nodes[1].kill9()
                time.sleep(rng.uniform(0.0, 0.5))
                if nodes[1].restart():  # moved: tell node 0's link, restart node 1's mover
                    moved += 1
                    with nodes[0].connect() as conn:
                        conn.execute("SELECT mbus.alter_link('next', %s)", (nodes[1].dsn,))
                    movers[1].kill9()
                    movers[1].start(rng)
                server_killed += 1
            else:
                ready = [m for m in movers if time.monotonic() >= m.killable_at]
                if ready:
                    mover = rng.choice(ready)
                    mover.kill9()
                    mover.start(rng)
    finally:
        producer.stop.set()
        thread.join(10)
        for mover in movers:
            mover.stop()
    # Finish in-process: move until nothing is left anywhere.
    finishers = [Bridge(node.dsn) for node in nodes]
    try:
        while sum(f.drain() for f in finishers):
            pass
    finally:
        for finisher in finishers:
            finisher.close()
    _check(nodes, {0: producer.committed, 1: list(range(1, 401))})
    return {
        "mover_kills": sum(m.kills for m in movers),
        "server_kills": server_killed,
        "server_moves": moved,
        "posted_0": len(producer.committed),
    }


def _check(nodes: list[Node], born: dict[int, list[int]]) -> None:
    """Every node holds every message once; seenby is the ring's path from where it was born."""
    size = len(nodes)
    names = [node.dbname for node in nodes]
    for here, node in enumerate(nodes):
        with node.connect() as conn:
            assert _pending(conn, "onward") == 0
            got = _messages(conn)
            assert len({i for i, _, _ in got}) == len(got), "a duplicated iid"
            for origin, numbers in born.items():
                mine = [(h, d) for _, h, d in got if d["origin"] == origin]
                assert [d["n"] for _, d in mine] == sorted(numbers), "lost, duplicated, reordered"
                path = [names[(origin + k) % size] for k in range((here - origin) % size + 1)]
                assert all(h["seenby"] == path for h, _ in mine)
                assert all(h["source_db"] == names[origin] for h, _ in mine)
            received = conn.execute("SELECT count(*) FROM mbus.exchange_received").fetchone()
            assert received == (sum(len(n) for o, n in born.items() if o != here),)


def test_kill9_of_movers_and_of_a_server_loses_and_duplicates_nothing(nodes: list[Node]) -> None:
    report = _chaos(seconds=12.0, server_kills=1, seed=17, nodes=nodes)
    assert report["mover_kills"] >= 6 and report["server_kills"] == 1
    assert report["posted_0"] > 500


@pytest.mark.chaos  # a soak (about a minute): `make chaos`; the test above is the fast tier
def test_kill9_soak_on_a_ring_of_three_servers(three_nodes: list[Node]) -> None:
    report = _chaos(seconds=45.0, server_kills=4, seed=1717, nodes=three_nodes)
    assert report["mover_kills"] >= 30 and report["server_kills"] == 4
