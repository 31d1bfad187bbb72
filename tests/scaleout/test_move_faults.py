"""A queue move between two servers under kill -9 of the mover (scale-out; chaos).

Two embedded clusters; the map on the first. 1,500 messages wait on the first server while a
producer keeps posting through a Cluster (re-reading the map every 0.1 s); the move
(``slow_move.py``, a subprocess) is killed with SIGKILL at random points and started again
until it finishes. The checker then reads the queue on both servers: every message posted is
on the new server exactly once (0 lost, 0 duplicated), the old server holds none, and the
messages that waited before the move kept their order.
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
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pgmbus import schema
from pgmbus.devdb import DevCluster
from pgmbus.scaleout import Cluster

HERE = Path(__file__).parent
DEPTH = "SELECT coalesce(sum(depth), 0) FROM mbus.queue_stats('orders')"
TAKE_ALL = "SELECT iid FROM mbus.consumen('orders', 'default', 100000)"


@pytest.fixture
def two_servers() -> Iterator[list[str]]:
    """Two embedded clusters with one pgmbus database each; their DSNs."""
    made: list[DevCluster] = []
    dsns: list[str] = []
    try:
        for n in range(2):
            home = Path(tempfile.mkdtemp(prefix=f"pgmbus-scaleout-{n}-"))
            home.chmod(0o755)
            cluster = DevCluster(home, ephemeral=True)
            made.append(cluster)
            cluster.start()
            name = f"bus_{n}_{os.getpid()}"
            with psycopg.connect(cluster.dsn("postgres"), autocommit=True) as admin:
                admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            with psycopg.connect(cluster.dsn(name)) as conn:
                schema.install(conn)
            dsns.append(cluster.dsn(name))
        yield dsns
    finally:
        for cluster in made:
            cluster.destroy()
            shutil.rmtree(cluster.home, ignore_errors=True)


@pytest.mark.chaos
def test_kill9_of_the_mover_loses_and_duplicates_nothing(two_servers: list[str]) -> None:
    home, other = two_servers
    admin = Cluster(home, refresh=0.0)
    admin.add_server("s1", home)
    admin.add_server("s2", other)
    with psycopg.connect(home, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue('orders', 1)")
        rows = conn.execute(
            "SELECT mbus.post_orders(jsonb_build_object('n', n)) "
            "FROM generate_series(1, 1500) n ORDER BY n"
        )
        waiting = [str(r[0]) for r in rows]
    admin.place("queue", "orders", ["s1"])
    posted: list[str] = []
    stop = threading.Event()

    def producer() -> None:
        with Cluster(home, refresh=0.1) as cluster:
            while not stop.is_set():
                posted.append(cluster.post("orders", {"live": len(posted)}))
                time.sleep(0.005)

    thread = threading.Thread(target=producer)
    thread.start()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    kills = 0
    try:
        for _ in range(60):
            mover = subprocess.Popen(
                [sys.executable, str(HERE / "slow_move.py"), home, "orders", "s2"], env=env
            )
            try:
                mover.wait(timeout=random.uniform(0.4, 1.5))
            except subprocess.TimeoutExpired:
                mover.send_signal(signal.SIGKILL)
                mover.wait()
                kills += 1
                continue
            place = admin.placement("queue", "orders")
            if mover.returncode == 0 or (place.servers == ("s2",) and not place.moving_to):
                break  # done (a kill after finish_move leaves a run that finds it done)
        else:
            pytest.fail("the move never finished")
    finally:
        stop.set()
        thread.join()
    assert kills >= 2  # the move was really interrupted
    assert admin.placement("queue", "orders").servers == ("s2",)
    with psycopg.connect(home, autocommit=True) as conn:
        assert conn.execute(DEPTH).fetchone() == (0,)
    with psycopg.connect(other, autocommit=True) as conn:
        got = [str(r[0]) for r in conn.execute(TAKE_ALL)]
    assert len(got) == len(set(got))  # 0 duplicated
    assert set(got) == set(waiting) | set(posted)  # 0 lost, nothing invented
    moved = [iid for iid in got if iid in set(waiting)]
    assert moved == waiting  # the waiting messages kept their order
