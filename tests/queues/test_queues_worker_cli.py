"""The worker process (retries, dmq, graceful SIGTERM) and the queue/dmq commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pgmbus.cli import app
from pgmbus.queues import Bus
from tests.processes import reap, stop

ROOT = Path(__file__).resolve().parents[2]


def _wait_until(check: Any, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


@pytest.mark.slow
def test_worker_retries_buries_and_stops_gracefully(autodb: str) -> None:
    """`pgmbus worker module:handler --queue q --consumer c --concurrency N`: retries with
    backoff, the dmq after the limit, leases extended while a handler runs, and on SIGTERM the
    message in hand is finished first."""
    with Bus(autodb) as bus:
        bus.post_batch("jobs", [{"n": i} for i in range(5)] + [{"fail": True}])
        env = os.environ | {"PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pgmbus",
                "worker",
                "tests.queues.handlers:handle",
                "--queue",
                "jobs",
                "--consumer",
                "default",
                "--concurrency",
                "3",
                "--max-attempts",
                "2",
                "--lease",
                "1",
                "--backoff",
                "0.05",
                "--poll",
                "0.2",
                "--dsn",
                autodb,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            _wait_until(lambda: bus.stats("jobs")[0].depth == 0 and len(bus.dmq("jobs")) == 1)
            (dead,) = bus.dmq("jobs")
            assert dead.reason.startswith("ValueError: cannot handle") and dead.attempts == 2
            bus.post("jobs", {"sleep": 2.5})  # longer than the lease: kept by extends
            _wait_until(lambda: bus.stats("jobs")[0].leased == 1)
            done = stop(proc)
        finally:
            reap(proc)
        out = done.stdout
        assert done.returncode == 0, out
        assert "6 done, 1 retried, 1 dead, 0 lost" in out
        assert bus.stats("jobs")[0].depth == 0  # the slow message was finished and acked


def test_queue_commands(autodb: str) -> None:
    """`pgmbus queue create|drop|list|stats|post|consume|peek` and `pgmbus dmq list|replay`."""
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(app, [*args, "--dsn", autodb])
        assert result.exit_code == 0, result.output
        return result.output

    run("queue", "create", "mail")
    run("queue", "consumer", "mail", "vip", "--selector", "t.properties ? 'vip'")
    iid = run("queue", "post", "mail", '{"to": "a@b"}', "--properties", '{"vip": 1}').strip()
    assert iid.startswith("mail.")
    assert "yes" in run("queue", "peek", "mail", iid)
    assert "mail" in run("queue", "list")
    stats = json.loads(run("queue", "stats", "mail", "--json"))
    assert {(s["consumer"], s["depth"]) for s in stats} == {("default", 1), ("vip", 1)}
    line = run("queue", "consume", "mail", "-c", "vip", "-n", "5").splitlines()[0]
    assert json.loads(line)["iid"] == iid
    with Bus(autodb) as bus:
        (m,) = bus.lease("mail")
        dmq_id = bus.bury(m, "bounced")
    listing = json.loads(run("dmq", "list", "--json"))
    assert [(d["dmq_id"], d["reason"]) for d in listing] == [(dmq_id, "bounced")]
    assert iid in run("dmq", "replay", str(dmq_id))
    assert iid in run("queue", "consume", "mail")
    bad = runner.invoke(app, ["queue", "post", "mail", "[1]", "--dsn", autodb])
    assert bad.exit_code == 2 and "JSON object" in bad.output  # a usage error
    missing = runner.invoke(app, ["queue", "peek", "mail", "--dsn", autodb])
    assert missing.exit_code == 1 and "no" in missing.output
    run("queue", "drop", "mail")
    assert "mail" not in run("queue", "list")
