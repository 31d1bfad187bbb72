"""Exactly once between two servers under kill -9 of the mover and of a server (issue 17).

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


@pytest.fixture
def nodes() -> Iterator[list[Node]]:
    made: list[Node] = []
    try:
        made = [_node("a"), _node("b")]
        yield made
    finally:
        for node in made:
            node.cluster.destroy()
            shutil.rmtree(node.cluster.home, ignore_errors=True)


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
                    "SELECT mbus.post('orders', jsonb_build_object('origin', 'a', 'n', n)) "
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
    a, b = nodes
    rng = random.Random(seed)
    with a.connect() as ca, b.connect() as cb:
        for conn, peer in ((ca, b), (cb, a)):
            conn.execute("SELECT mbus.create_queue('orders', 1)")
            conn.execute("SELECT mbus.create_link('peer', %s)", (peer.dsn,))
            conn.execute("SELECT mbus.create_route('to_peer', 'peer', 'orders', 'orders')")
        cb.execute(
            "SELECT mbus.post('orders', jsonb_build_object('origin', 'b', 'n', n)) "
            "FROM generate_series(1, 400) AS n"
        )
    producer = Producer(a)
    thread = threading.Thread(target=producer.run, daemon=True)
    movers = [Mover(a), Mover(b)]
    for mover in movers:
        mover.start(rng)
    thread.start()
    kill_server_at = sorted(rng.uniform(0.2, 0.8) * seconds for _ in range(server_kills))
    start = time.monotonic()
    server_killed = 0
    try:
        while (elapsed := time.monotonic() - start) < seconds:
            time.sleep(rng.uniform(0.02, 0.2))
            if kill_server_at and elapsed >= kill_server_at[0]:
                kill_server_at.pop(0)
                b.kill9()
                time.sleep(rng.uniform(0.0, 0.5))
                if b.restart():  # moved: tell A's link, restart B's own mover on the new DSN
                    with a.connect() as conn:
                        conn.execute("SELECT mbus.alter_link('peer', %s)", (b.dsn,))
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
    # Finish in-process: move until nothing is left on either side.
    finishers = [Bridge(a.dsn), Bridge(b.dsn)]
    try:
        while sum(f.drain() for f in finishers):
            pass
    finally:
        for finisher in finishers:
            finisher.close()
    _check(nodes, producer.committed, 400)
    return {
        "mover_kills": sum(m.kills for m in movers),
        "server_kills": server_killed,
        "posted_a": len(producer.committed),
    }


def _check(nodes: list[Node], posted_a: list[int], posted_b: int) -> None:
    a, b = nodes
    with a.connect() as ca, b.connect() as cb:
        assert _pending(ca, "to_peer") == 0 and _pending(cb, "to_peer") == 0
        for conn, here, there, mine, theirs in (
            (ca, a.dbname, b.dbname, posted_a, list(range(1, posted_b + 1))),
            (cb, b.dbname, a.dbname, list(range(1, posted_b + 1)), posted_a),
        ):
            got = _messages(conn)
            origin_here = "a" if here == a.dbname else "b"
            own = [(i, h, d) for i, h, d in got if d["origin"] == origin_here]
            came = [(i, h, d) for i, h, d in got if d["origin"] != origin_here]
            assert len({i for i, _, _ in got}) == len(got), "a duplicated iid"
            assert sorted(d["n"] for _, _, d in own) == sorted(mine)
            assert [d["n"] for _, _, d in came] == sorted(theirs), "lost, duplicated or reordered"
            assert all(h["seenby"] == [here] for _, h, _ in own)
            assert all(h["seenby"] == [there, here] and h["source_db"] == there for _, h, _ in came)
            received = conn.execute("SELECT count(*) FROM mbus.exchange_received").fetchone()
            assert received == (len(theirs),)


def test_kill9_of_movers_and_of_a_server_loses_and_duplicates_nothing(nodes: list[Node]) -> None:
    report = _chaos(seconds=12.0, server_kills=1, seed=17, nodes=nodes)
    assert report["mover_kills"] >= 6 and report["server_kills"] == 1
    assert report["posted_a"] > 500


@pytest.mark.slow
def test_kill9_soak(nodes: list[Node]) -> None:
    report = _chaos(seconds=45.0, server_kills=4, seed=1717, nodes=nodes)
    assert report["mover_kills"] >= 40 and report["server_kills"] == 4
