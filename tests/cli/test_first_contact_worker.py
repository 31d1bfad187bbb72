"""``pgmbus worker`` as a new user first runs it: the command line's DSN, missing queues."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

from pgmbus import streams
from pgmbus.queues import Bus
from tests.cli.conftest import ROOT, process_env, run_process

LIBPQ = ("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE")

MODULE = """
import os

from pgmbus.queues import Bus

bus = Bus()  # as docs/workers.md shows: the DSN rule decides


@bus.handler("mail")
def send(message):
    with open(os.environ["FIRST_CONTACT_OUT"], "a") as out:
        out.write(message.data["to"] + "\\n")


@bus.stream_handler("audit")
def audit(conn, event):
    pass
"""


def _bare_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No $PGMBUS_DSN, no libpq variable, no embedded cluster: only --dsn names a database."""
    env = {k: v for k, v in process_env().items() if k not in LIBPQ}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT / "src"), str(ROOT)])
    env["PGMBUS_HOME"] = str(tmp_path / "no-cluster")
    env.update(extra)
    return env


def test_the_command_lines_dsn_reaches_a_module_level_bus(db_dsn: str, tmp_path: Path) -> None:
    (tmp_path / "first_contact_app.py").write_text(MODULE)
    out = tmp_path / "handled.txt"
    with Bus(db_dsn) as bus:
        bus.create_queue("mail")
        bus.post("mail", {"to": "ann@example.org"})
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        streams.create_group(conn, "audit")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgmbus", "worker", "first_contact_app:bus", "--dsn", db_dsn],
        cwd=tmp_path,
        env=_bare_env(tmp_path, FIRST_CONTACT_OUT=str(out)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (out.exists() and out.read_text()) and proc.poll() is None:
            assert time.monotonic() < deadline, "the worker handled nothing in 30 s"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert out.read_text() == "ann@example.org\n"
    assert "worker stopped" in stdout
    assert not (tmp_path / "no-cluster").exists()


def test_a_function_worker_on_a_missing_queue_says_how_to_create_it(db_dsn: str) -> None:
    done = run_process("worker", "os:getcwd", "--queue", "nosuchq", "--dsn", db_dsn)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ") and "queue 'nosuchq' does not exist" in line
    assert "`pgmbus queue create nosuchq`" in line


def test_a_missing_consumer_names_its_fix(db_dsn: str) -> None:
    with Bus(db_dsn) as bus:
        bus.create_queue("jobs")
    done = run_process("worker", "os:getcwd", "-q", "jobs", "-c", "nobody", "--dsn", db_dsn)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert "consumer 'nobody' of queue 'jobs' does not exist" in line
    assert "`pgmbus queue create-consumer jobs nobody`" in line


def test_an_app_worker_on_a_database_without_its_queues_lists_each_fix(
    db_dsn: str, tmp_path: Path
) -> None:
    (tmp_path / "first_contact_app.py").write_text(MODULE)
    done = subprocess.run(
        [sys.executable, "-m", "pgmbus", "worker", "first_contact_app:bus", "--dsn", db_dsn],
        cwd=tmp_path,
        env=_bare_env(tmp_path, FIRST_CONTACT_OUT=str(tmp_path / "out")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert "`pgmbus queue create mail`" in line
    assert "`pgmbus streams create-group audit`" in line


def test_a_worker_on_a_database_without_the_schema_says_install(
    make_db: Callable[..., str],
) -> None:
    dsn = make_db(installed=False)
    done = run_process("worker", "os:getcwd", "--queue", "q", "--dsn", dsn)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert "`pgmbus install`" in line


def test_a_saga_worker_on_a_missing_queue_stops_with_the_fix(db_dsn: str) -> None:
    """Its loop retries every error: unchecked, a missing queue would be polled in silence."""
    done = run_process(
        "saga", "worker", "os:getcwd", "--queue", "nosuchq", "--dsn", db_dsn, timeout=30
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert "`pgmbus queue create nosuchq`" in line
