"""``pgmbus worker --health`` serves the handlers' Prometheus metrics on ``/metrics``: a real
worker process, scraped before and after known work (successes, a failure that is retried, one
that is buried; a stream event that fails until it is dead-lettered)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from pgmbus import streams
from pgmbus.queues import Bus
from tests.processes import reap, stop, wait_until

ROOT = Path(__file__).resolve().parents[2]
WORK = {"engine": "queues", "handler": "tests.workers.metrics_app.work", "queue": "work"}
TALLY = {"engine": "streams", "handler": "tests.workers.metrics_app.tally", "group": "tally"}
TYPES = {
    "pgmbus_worker_handler_duration_seconds": "histogram",
    "pgmbus_worker_in_flight": "gauge",
    "pgmbus_worker_successes": "counter",
    "pgmbus_worker_failures": "counter",
    "pgmbus_worker_retries": "counter",
    "pgmbus_worker_dead_lettered": "counter",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _get(port: int, path: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return r.status, r.headers["Content-Type"], r.read().decode()


class Scrape:
    """One parsed scrape: the family types and every sample."""

    def __init__(self, text: str) -> None:
        self.text = text
        families = list(text_string_to_metric_families(text))
        self.types = {f.name: f.type for f in families}
        self.samples: list[Sample] = [s for f in families for s in f.samples]

    def value(self, name: str, labels: dict[str, str]) -> float:
        """The sample ``name`` whose labels include ``labels`` (missing ones read as empty)."""
        found = [
            s.value
            for s in self.samples
            if s.name == name
            and all(s.labels.get(k, "") == labels.get(k, "") for k in ("engine", "handler"))
            and all(s.labels.get(k, "") == v for k, v in labels.items())
        ]
        assert len(found) == 1, (name, labels, found)
        return found[0]

    def counters(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every monotonic sample: counters' ``_total`` and the histogram's buckets, count, sum."""
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for s in self.samples
            if s.name.endswith(("_total", "_bucket", "_count", "_sum"))
        }


def _scrape(port: int) -> Scrape:
    status, kind, text = _get(port, "/metrics")
    assert status == 200 and kind.startswith("text/plain; version="), (status, kind)
    return Scrape(text)


@pytest.fixture
def worker(db_dsn: str) -> Iterator[tuple[str, int, subprocess.Popen[str]]]:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        streams.create_group(conn, "tally", start="beginning")
        conn.execute(
            "SELECT mbus.configure_group('tally', max_attempts => 2, retry_backoff => '0 s')"
        )
    with Bus(db_dsn) as bus:
        bus.create_queue("work")
    port = _free_port()
    env = os.environ | {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "PGMBUS_DSN": db_dsn}
    target = "tests.workers.metrics_app:app"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgmbus", "worker", target, "--health", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield db_dsn, port, proc
    finally:
        reap(proc)


def test_metrics_count_each_handler_call_by_outcome(
    worker: tuple[str, int, subprocess.Popen[str]],
) -> None:
    dsn, port, proc = worker

    def up() -> bool:
        try:
            return _get(port, "/")[0] == 200
        except OSError:
            return False

    wait_until(up, proc=proc, what="the health endpoint")
    before = _scrape(port)
    for name, kind in TYPES.items():
        assert before.types[name] == kind, name
    # every handler's series exist at zero before any work: rate() sees the first call
    assert before.value("pgmbus_worker_successes_total", WORK) == 0
    assert before.value("pgmbus_worker_handler_duration_seconds_count", TALLY) == 0

    with Bus(dsn) as bus:
        for data in ({"n": 1}, {"n": 2}, {"fail": 1}, {"bury": True}):
            bus.post("work", data)
    with psycopg.connect(dsn, autocommit=True) as conn:
        streams.publish_batch(conn, "ledger", [{"n": 1}, {"n": 2}, {"fail": True}])

    def settled() -> bool:
        now = _scrape(port)
        return (
            now.value("pgmbus_worker_successes_total", WORK) == 3
            and now.value("pgmbus_worker_dead_lettered_total", WORK) == 1
            and now.value("pgmbus_worker_dead_lettered_total", TALLY) == 1
            and now.value("pgmbus_worker_successes_total", TALLY) == 2
        )

    wait_until(settled, proc=proc, what="the work done")
    after = _scrape(port)
    for key, value in before.counters().items():
        assert after.counters()[key] >= value, key
    # the queue: 2 plain, 1 after one retry, 1 buried at once
    assert after.value("pgmbus_worker_failures_total", WORK) == 2
    assert after.value("pgmbus_worker_retries_total", WORK) == 1
    # the stream: the failing event fails twice (max_attempts 2), each failure a retry entry
    assert after.value("pgmbus_worker_failures_total", TALLY) == 2
    assert after.value("pgmbus_worker_retries_total", TALLY) == 2
    for labels, calls in ((WORK, 5), (TALLY, 4)):
        count = after.value("pgmbus_worker_handler_duration_seconds_count", labels)
        assert (
            count
            == calls
            == (
                after.value("pgmbus_worker_successes_total", labels)
                + after.value("pgmbus_worker_failures_total", labels)
            )
        )
        assert after.value("pgmbus_worker_handler_duration_seconds_sum", labels) > 0
        inf = {**labels, "le": "+Inf"}
        assert after.value("pgmbus_worker_handler_duration_seconds_bucket", inf) == calls
        assert after.value("pgmbus_worker_in_flight", labels) == 0
    # the health answer is unchanged on every other path
    assert _get(port, "/healthz")[1] == "application/json"
    if shutil.which("promtool") is not None:
        checked = subprocess.run(
            ["promtool", "check", "metrics"],
            input=after.text,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
    done = stop(proc)
    assert done.returncode == 0, done.stderr
