"""`pgmbus dev start --ha` on pg_auto_failover's own defaults: a user's first try, and the
failover time those defaults give (kill -9 of the primary's postmaster and keeper)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from pgmbus.testing.ha import HACluster

pytestmark = [pytest.mark.chaos]


def _pgmbus(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PGMBUS_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "pgmbus", "dev", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.timeout(420)
def test_dev_start_ha_fails_over_with_the_defaults() -> None:
    folder = Path(tempfile.mkdtemp(prefix="pgmbus-dev-ha-"))
    folder.chmod(0o755)  # the server user must enter it when we are root
    home = folder / "pgmbus"
    started = _pgmbus(home, "start", "--ha", "--json")
    cluster = HACluster(home / "ha")
    try:
        assert started.returncode == 0, started.stderr
        shown = json.loads(started.stdout)
        first = shown["primary"]
        assert first in ("node1", "node2")
        with psycopg.connect(shown["dsn"], autocommit=True) as conn:
            assert conn.execute("SHOW synchronous_standby_names").fetchone() != ("",)
        kill = time.monotonic()
        cluster.kill_node(first)
        second = cluster.wait_for_primary(other_than=first, timeout=180)
        took = time.monotonic() - kill
        print(f"failover with pg_auto_failover's defaults: {took:.1f} s")
        status = _pgmbus(home, "status", "--ha", "--json")
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["primary"] == second
        with psycopg.connect(shown["dsn"], autocommit=True) as conn:
            conn.execute("CREATE TABLE written_after_failover ()")
    finally:
        stopped = _pgmbus(home, "stop", "--ha")
        cluster.destroy()
        shutil.rmtree(folder, ignore_errors=True)
    assert stopped.returncode == 0, stopped.stderr
