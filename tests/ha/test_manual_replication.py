"""The plain alternative of docs/ha.md: streaming replication set up by hand (pg_basebackup -R),
a synchronous standby, the primary killed (-9) and the standby promoted with `pg_ctl promote`;
the multi-host DSN finds the new primary and nothing acknowledged is lost."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pgmbus import schema
from pgmbus.devdb import DevCluster, find_bindir
from pgmbus.queues import Bus


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="pgmbus-replica-"))
    path.chmod(0o755)  # the server user must enter it when we are root
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _as_server(cluster: DevCluster, *argv: str) -> None:
    command = [*(["runuser", "-u", cluster.server_user, "--"] if cluster.as_root else []), *argv]
    subprocess.run(command, check=True, capture_output=True, timeout=120)


@pytest.mark.timeout(180)
def test_a_standby_promoted_by_hand_keeps_what_was_acknowledged(folder: Path) -> None:
    primary = DevCluster(folder / "primary", ephemeral=True)
    standby = DevCluster(folder / "standby", ephemeral=True)
    try:
        primary.start()
        with psycopg.connect(primary.dsn(), autocommit=True) as conn:
            schema.install(conn)
        standby.home.mkdir()
        standby.home.chmod(0o755)
        if standby.as_root:
            shutil.chown(standby.home, user=primary.server_user)
        bindir = find_bindir()
        _as_server(
            primary,
            str(bindir / "pg_basebackup"),
            "-d",
            primary.dsn("postgres"),
            "-D",
            str(standby.data_dir),
            "-R",
            "-X",
            "stream",
            "--no-sync",
            "--checkpoint=fast",  # a spread checkpoint would take minutes
        )
        standby.start()
        with psycopg.connect(primary.dsn(), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            conn.execute("ALTER SYSTEM SET synchronous_commit = 'on'")  # ephemeral: off
            conn.execute("SELECT pg_reload_conf()")
        both = (
            f"host=127.0.0.1,127.0.0.1 port={primary.port},{standby.port} user=postgres "
            "dbname=pgmbus target_session_attrs=read-write connect_timeout=2"
        )
        with Bus(both, max_size=1, rotate_every=None) as bus:
            bus.create_queue("jobs")
            bus.post("jobs", {"n": 1}, iid="before")  # acknowledged: on the standby too
        pid = primary.status().pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        _as_server(standby, str(bindir / "pg_ctl"), "-D", str(standby.data_dir), "-w", "promote")
        with Bus(both, max_size=1, rotate_every=None) as bus:
            bus.post("jobs", {"n": 2}, iid="after")
            got = bus.consume("jobs", limit=10)
        assert sorted(m.data["n"] for m in got) == [1, 2]
        with psycopg.connect(both) as conn:
            assert conn.execute("SELECT inet_server_port()").fetchone() == (standby.port,)
    finally:
        standby.destroy()
        primary.destroy()
