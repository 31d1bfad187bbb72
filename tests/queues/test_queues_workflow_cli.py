"""The queue workflow CLI: waiting messages, views, temporary-queue collection, saga list."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb
from typer.testing import CliRunner

from pgmbus.cli import app
from tests.processes import reap, stop


def test_waiting_view_clear_temp_and_saga_list(autodb: str) -> None:
    """`pgmbus queue waiting|view|clear-temp` and `pgmbus saga list` show the workflows' state."""
    runner = CliRunner()
    with psycopg.connect(autodb, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue('other', 1)")
        dep = conn.execute("SELECT mbus.post_jobs('{}')").fetchone()
        assert dep is not None
        conn.execute("SELECT mbus.post_other('{}', %s)", (Jsonb({"consume_after": [dep[0]]}),))
        conn.execute(
            "SELECT mbus.saga_start('demo', %s)",
            (Jsonb([{"step": "one", "queue": "jobs", "compensate": "other"}]),),
        )
    out = runner.invoke(app, ["queue", "waiting", "--json", "--dsn", autodb])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert next(r["waits_for"] for r in rows if r["queue"] == "other") == [dep[0]]
    out = runner.invoke(app, ["queue", "view", "jobs", "--dsn", autodb])
    assert out.exit_code == 0 and out.output.strip() == "public.jobs_q", out.output
    out = runner.invoke(app, ["queue", "clear-temp", "--dsn", autodb])
    assert out.exit_code == 0 and "0 temporary" in out.output, out.output
    out = runner.invoke(app, ["saga", "list", "--json", "--dsn", autodb])
    assert out.exit_code == 0, out.output
    (saga,) = json.loads(out.output)
    assert saga["state"] == "running"
    assert saga["steps"] == {"one": {"forward": "pending", "compensation": "waiting"}}


def test_saga_worker_and_pump_commands(autodb: str) -> None:
    """`pgmbus saga worker module:handler --queue q` and `pgmbus saga pump` run a saga to its
    end, and stop on SIGTERM."""
    root = Path(__file__).resolve().parents[2]
    with psycopg.connect(autodb, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue('undo', 1)")
        ok = conn.execute(
            "SELECT mbus.saga_start('cli', %s)",
            (Jsonb([{"step": "one", "queue": "jobs", "compensate": "undo"}]),),
        ).fetchone()
        bad = conn.execute(
            "SELECT mbus.saga_start('cli', %s, %s)",
            (Jsonb([{"step": "one", "queue": "jobs", "compensate": "undo"}]), Jsonb({})),
        ).fetchone()
        conn.execute(
            "UPDATE mbus.q_jobs SET data = data || '{\"fail\": true}' WHERE data->>'saga_id' = %s",
            (str(bad[0]) if bad else "",),
        )
        assert ok is not None and bad is not None
    env = os.environ | {"PYTHONPATH": str(root)}
    base = [sys.executable, "-m", "pgmbus", "saga"]
    procs = [
        subprocess.Popen(
            [*base, "worker", "tests.queues.saga_handlers:step", "-q", "jobs", "--dsn", autodb],
            env=env,
            cwd=root,
        ),
        subprocess.Popen(
            [*base, "worker", "tests.queues.saga_handlers:undo", "-q", "undo", "--dsn", autodb],
            env=env,
            cwd=root,
        ),
        subprocess.Popen([*base, "pump", "--dsn", autodb], env=env, cwd=root),
    ]
    try:
        with psycopg.connect(autodb, autocommit=True) as conn:
            deadline = time.monotonic() + 60
            while True:
                states = conn.execute(
                    "SELECT array_agg(state ORDER BY saga_id) FROM mbus.sagas"
                ).fetchone()
                if states and states[0] == ["completed", "compensated"]:
                    break
                assert time.monotonic() < deadline, states
                time.sleep(0.1)
            log = conn.execute("SELECT array_agg(step ORDER BY step) FROM saga_cli_log").fetchone()
            assert log == (["one", "undo_one"],)
        for p in procs:
            p.send_signal(signal.SIGTERM)
        codes = [stop(p, None).returncode for p in procs]
    finally:
        for p in procs:
            reap(p)
    assert codes == [0, 0, 0]
