"""Fixtures of the Celery tests: a database, the test app, real worker processes."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import pytest

from pgmbus.testing.server import TestServer
from tests.contrib.celery_helpers import ROOT, Start


@pytest.fixture(scope="module")
def celery_env(pg_server: TestServer) -> Iterator[dict[str, str]]:
    name = pg_server.create_database()
    dsn = pg_server.dsn(name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE celery_effects (key text, worker text, info jsonb,"
            " at timestamptz DEFAULT clock_timestamp())"
        )
    results = tempfile.mkdtemp(prefix="pgmbus-celery-")
    env = {"PGMBUS_CELERY_DSN": dsn, "PGMBUS_CELERY_RESULTS": results}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        pg_server.drop_database(name)


@pytest.fixture(scope="module")
def tasks(celery_env: dict[str, str]) -> ModuleType:
    sys.modules.pop("tests.contrib.celery_app", None)
    return importlib.import_module("tests.contrib.celery_app")


@pytest.fixture(scope="module")
def start_worker(celery_env: dict[str, str]) -> Iterator[Start]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(
        name: str,
        queues: str,
        *,
        pool: str = "threads",
        lease: float = 30,
        poll: float = 1,
        concurrency: int = 2,
        log: Path | None = None,
    ) -> Any:
        env = {
            **os.environ,
            **celery_env,
            "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
            "PGMBUS_CELERY_WORKER": name,
            "PGMBUS_CELERY_LEASE": str(lease),
            "PGMBUS_CELERY_POLL": str(poll),
        }
        cmd = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "tests.contrib.celery_app",
            "worker",
            "--pool",
            pool,
            "-c",
            str(concurrency),
            "-Q",
            queues,
            "-n",
            f"{name}@%h",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
        out = None if log is None else log.open("ab")
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, start_new_session=True, stderr=out)
        if out is not None:
            out.close()  # the worker has its own copy
        procs.append(proc)
        return proc

    yield start
    # All at once: a warm shutdown takes each worker ~3 s (Celery's loop for transports
    # without an event hub drains with a 2 s timeout), one after the other 12 s of the suite.
    running = [proc for proc in procs if proc.poll() is None]
    for proc in running:
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    for proc in running:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
