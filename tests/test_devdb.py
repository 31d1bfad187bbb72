"""The embedded cluster manager: life cycle, stale pid recovery, root and non-root use."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pgmbus.devdb import DevCluster, find_bindir
from pgmbus.errors import DevDBError

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture
def cluster_home() -> Iterator[Path]:
    home = Path(tempfile.mkdtemp(prefix="pgmbus-devdb-"))
    home.chmod(0o755)
    yield home / "cluster"
    DevCluster(home / "cluster").destroy()
    shutil.rmtree(home, ignore_errors=True)


def _select_one(dsn: str) -> int:
    with psycopg.connect(dsn, connect_timeout=5) as conn:
        row = conn.execute("SELECT 1").fetchone()
    assert row is not None
    return int(row[0])


def test_start_status_stop_and_idempotence(cluster_home: Path) -> None:
    cluster = DevCluster(cluster_home, ephemeral=True)
    assert not cluster.status().initialized

    first = cluster.start()
    assert first.running and first.pid and first.port
    assert _select_one(cluster.dsn()) == 1
    assert (cluster_home / "run" / f".s.PGSQL.{first.port}").exists(), "unix socket in the folder"

    second = cluster.start()  # start twice is harmless
    assert second.pid == first.pid

    assert cluster.stop() is True
    assert not cluster.status().running
    assert cluster.stop() is False  # stop when stopped is harmless
    with pytest.raises(psycopg.OperationalError):
        _select_one(cluster.dsn())


def test_restart_after_kill_9_of_postmaster(cluster_home: Path) -> None:
    cluster = DevCluster(cluster_home, ephemeral=True)
    pid = cluster.start().pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while cluster.status().running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (cluster_home / "data" / "postmaster.pid").exists(), "a stale pid file is left"

    again = cluster.start()
    assert again.running and again.pid != pid
    assert _select_one(cluster.dsn()) == 1


def test_stale_pid_file_naming_a_live_foreign_process(cluster_home: Path) -> None:
    cluster = DevCluster(cluster_home, ephemeral=True)
    cluster.start()
    cluster.stop()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        pid_file = cluster_home / "data" / "postmaster.pid"
        pid_file.write_text(f"{sleeper.pid}\n{cluster_home / 'data'}\n")
        assert cluster.start().running
        assert _select_one(cluster.dsn()) == 1
    finally:
        sleeper.kill()
        sleeper.wait()


def test_destroy_removes_everything(cluster_home: Path) -> None:
    cluster = DevCluster(cluster_home, ephemeral=True)
    cluster.start()
    cluster.destroy()
    assert not cluster_home.exists()


def test_missing_binaries_name_the_debian_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("PGMBUS_PG_BINDIR", raising=False)
    with pytest.raises(DevDBError, match=r"apt-get install postgresql"):
        find_bindir(globs=())


@pytest.mark.skipif(os.geteuid() != 0, reason="runs the server as root's helper user")
def test_as_root_the_server_runs_as_an_unprivileged_user(cluster_home: Path) -> None:
    cluster = DevCluster(cluster_home, ephemeral=True)
    info = cluster.start()
    assert info.server_user != "root"
    owner = (cluster_home / "data").stat().st_uid
    assert owner != 0
    with open(f"/proc/{info.pid}/status") as status:
        uid_line = next(line for line in status if line.startswith("Uid:"))
    assert uid_line.split()[1] == str(owner)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to an ordinary user")
def test_as_an_ordinary_user(cluster_home: Path) -> None:
    """An ordinary user runs the manager itself (no runuser), with the system Python."""
    user = "postgres"
    workdir = Path(tempfile.mkdtemp(prefix="pgmbus-user-"))
    try:
        shutil.copytree(SRC / "pgmbus", workdir / "pgmbus")
        shutil.chown(workdir, user=user)
        for path in workdir.rglob("*"):
            shutil.chown(path, user=user)
        workdir.chmod(0o755)
        home = workdir / "home"
        script = (
            "import sys; from pgmbus.devdb import DevCluster\n"
            f"c = DevCluster({str(home)!r}, ephemeral=True)\n"
            "s = c.start(); assert s.running and s.server_user == 'postgres', s\n"
            "assert c.start().pid == s.pid\n"
            "print(c.dsn()); assert c.stop()\n"
        )
        python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
        proc = subprocess.run(
            ["runuser", "-u", user, "--", python, "-c", script],
            capture_output=True,
            text=True,
            env={"PATH": os.environ["PATH"], "PYTHONPATH": str(workdir), "HOME": str(workdir)},
            cwd=str(workdir),
            timeout=90,
        )
        assert proc.returncode == 0, proc.stderr
        assert "host=127.0.0.1" in proc.stdout
        assert (home / "data" / "PG_VERSION").stat().st_uid != 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _producer(dsn: str, stop: threading.Event, acked: list[int], errors: list[str]) -> None:
    """Insert numbered rows, one per transaction; reconnect to the same DSN after a failure."""
    n = 0
    conn: psycopg.Connection[tuple[object, ...]] | None = None
    while not stop.is_set():
        try:
            if conn is None or conn.closed:
                conn = psycopg.connect(dsn, autocommit=True, connect_timeout=2)
            n += 1
            conn.execute("INSERT INTO produced (n) VALUES (%s)", (n,))
            acked.append(n)
        except psycopg.OperationalError as exc:
            errors.append(type(exc).__name__)
            if conn is not None:
                conn.close()
            conn = None
            time.sleep(0.05)
    if conn is not None:
        conn.close()


def test_kill_9_under_load_restarts_on_the_same_port(cluster_home: Path) -> None:
    """A producer holding the DSN goes on after kill -9 of the postmaster and a restart."""
    cluster = DevCluster(cluster_home)  # durable: acknowledged commits must survive the crash
    before = cluster.start()
    assert before.pid is not None and before.port is not None
    dsn = cluster.dsn()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE produced (n int PRIMARY KEY)")
        sync = conn.execute("SHOW recovery_init_sync_method").fetchone()
    assert sync == ("syncfs",), "a crash restart syncs the file system once, not every file"
    stop = threading.Event()
    acked: list[int] = []
    errors: list[str] = []
    thread = threading.Thread(target=_producer, args=(dsn, stop, acked, errors), daemon=True)
    thread.start()
    # An idle client (a pool's spare connection) keeps its half of a connection to the old
    # server open until it next uses it: the port is not free for a plain bind then.
    idle = psycopg.connect(dsn, autocommit=True)
    try:
        deadline = time.monotonic() + 20
        while len(acked) < 50 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(acked) >= 50, "the producer runs before the crash"
        os.kill(before.pid, signal.SIGKILL)
        after = cluster.start(port_wait=20)
        assert after.running and after.pid != before.pid
        assert after.port == before.port, "the server comes back where the clients look"
        assert cluster.dsn() == dsn
        at_restart = len(acked)
        deadline = time.monotonic() + 20
        while len(acked) < at_restart + 50 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(acked) >= at_restart + 50, "the producer reconnected to the same DSN"
        with pytest.raises(psycopg.OperationalError):
            idle.execute("SELECT 1")
    finally:
        idle.close()
        stop.set()
        thread.join(10)
    assert errors, "the crash cut the producer's connection"
    with psycopg.connect(dsn) as conn:
        stored = {int(r[0]) for r in conn.execute("SELECT n FROM produced").fetchall()}
    assert set(acked) <= stored, "every acknowledged insert survived the crash"


def test_restart_refuses_a_port_taken_by_another_program(cluster_home: Path) -> None:
    cluster = DevCluster(cluster_home, ephemeral=True)
    port = cluster.start().port
    assert port is not None
    cluster.stop()
    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        started = time.monotonic()
        with pytest.raises(DevDBError, match=rf"port {port} on 127.0.0.1 is taken"):
            cluster.start(port_wait=1.0)
        assert time.monotonic() - started < 10, "the wait is bounded"
        moved = cluster.start(new_port=True)
        assert moved.running and moved.port != port
        assert _select_one(cluster.dsn()) == 1
    finally:
        squatter.close()
