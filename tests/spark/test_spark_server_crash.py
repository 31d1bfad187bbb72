"""The Spark writer's exactly-once state across a ``kill -9`` of the server and its recovery
(crash recovery empties the unlogged staging tables; see tests/spark/lost_staging.py)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from pgmbus import schema
from pgmbus.devdb import DevCluster
from tests.spark.lost_staging import check_exactly_once_across


def _wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _synchronous_commit(dsn: str) -> bool:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SHOW synchronous_commit").fetchone() == ("on",)


@pytest.fixture
def crashable() -> Iterator[DevCluster]:
    """A cluster of its own (the shared test server must not be killed), schema installed."""
    home = Path(tempfile.mkdtemp(prefix="pgmbus-spark-crash-"))
    home.chmod(0o755)  # the server user must enter it when we are root
    # fsync off is harmless here (a kill -9 of the server keeps the OS's page cache), but an
    # acknowledged commit must have its WAL written: synchronous commits
    cluster = DevCluster(home / "cluster", ephemeral=True)
    cluster.start()
    try:
        with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET synchronous_commit = on")
            conn.execute("SELECT pg_reload_conf()")
            schema.install(conn)
        _wait_for(lambda: _synchronous_commit(cluster.dsn()))
        yield cluster
    finally:
        cluster.destroy()
        shutil.rmtree(home, ignore_errors=True)


def test_a_server_crash_loses_no_committed_batch_and_publishes_no_short_one(
    crashable: DevCluster,
) -> None:
    def kill_9_and_restart() -> str:
        pid = crashable.status().pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        _wait_for(lambda: not crashable.status().running)
        assert crashable.start(port_wait=30).running
        return crashable.dsn()

    check_exactly_once_across(crashable.dsn(), kill_9_and_restart)
