"""`pgmbus worker tests.workers.app:bus` as a real process on a real database: every handler of
the app runs (sync and async), retry policies, time limits, logs, health, streams, SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgmbus import streams
from pgmbus.queues import Bus

ROOT = Path(__file__).resolve().parents[2]
QUEUES = ("jobs", "mail", "report", "long")


def _wait_until(check: Callable[[], Any], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _health(port: int) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture
def appdb(db_dsn: str) -> Iterator[str]:
    """The app's queues, its stream group and the tables its handlers write."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE handled (handler text, iid text, attempt int)")
        conn.execute("CREATE TABLE audited (event_id bigint)")
        streams.create_group(conn, "audit", start="beginning")
    with Bus(db_dsn) as bus:
        for q in QUEUES:
            bus.create_queue(q)
    yield db_dsn


@contextmanager
def _worker(
    dsn: str, *args: str, target: str = "tests.workers.app:bus"
) -> Iterator[subprocess.Popen[str]]:
    env = os.environ | {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "PGMBUS_DSN": dsn}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgmbus", "worker", target, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _handled(dsn: str, handler: str) -> list[tuple[str, int]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT iid, attempt FROM handled WHERE handler = %s ORDER BY iid", (handler,)
        ).fetchall()
    return [(r[0], r[1]) for r in rows]


def _logs(stderr: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_worker_runs_every_handler_with_its_policy(appdb: str) -> None:
    """Sync and async handlers handle their queues; a failing one is retried per its policy
    then buried with its reason; an excluded exception type is buried at once; time limits
    cancel (async) or abandon (sync) an attempt and say so in the logs with the message's
    context; the stream handler consumes its group exactly once; health answers 200."""
    port = _free_port()
    with psycopg.connect(appdb, autocommit=True) as conn:
        streams.publish_batch(conn, "orders", [{"i": i} for i in range(30)])
    with Bus(appdb) as bus:
        ok_jobs = bus.post_batch("jobs", [{"n": i} for i in range(6)])
        flaky = bus.post("jobs", {"flaky": True})
        permanent = bus.post("jobs", {"permanent": True})
        ok_mail = bus.post_batch("mail", [{"n": i} for i in range(4)])
        slow_mail = bus.post("mail", {"sleep": 5})
        slow_report = bus.post("report", {"sleep": 1.5})
        with _worker(appdb, "--health", f"127.0.0.1:{port}", "--log-format", "json") as proc:
            _wait_until(lambda: len(bus.dmq()) == 4)
            with psycopg.connect(appdb, autocommit=True) as conn:  # while it runs: woken up
                streams.publish_batch(conn, "orders", [{"i": i} for i in range(30, 50)])
                _wait_until(
                    lambda: conn.execute("SELECT count(*) FROM audited").fetchone() == (50,)
                )
            _wait_until(lambda: len(_handled(appdb, "report")) == 1)  # the abandoned thread
            status, body = _health(port)
            assert status == 200 and body["status"] == "ok"
            assert "tests.workers.app.jobs" in body["loops"]
            assert "tests.workers.app.audit" in body["loops"]
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, out + err
        dead = {d.iid: d for d in bus.dmq()}
        assert {s.depth for s in bus.stats()} == {0}

    assert _handled(appdb, "jobs") == sorted((iid, 1) for iid in ok_jobs)
    assert _handled(appdb, "mail") == sorted((iid, 1) for iid in ok_mail)
    assert set(dead) == {flaky, permanent, slow_mail, slow_report}
    # retried per the policy (3 attempts), then buried with the exception as reason
    assert dead[flaky].attempts == 3 and dead[flaky].reason == "ConnectionError: smtp down"
    # no_retry_on: buried at the first attempt
    assert dead[permanent].attempts == 1 and dead[permanent].reason == "Permanent: bad input"
    # an async handler over its limit is cancelled: never recorded, 2 attempts, then buried
    assert dead[slow_mail].attempts == 2
    assert dead[slow_mail].reason == "HandlerTimeout: handler exceeded 0.5s"
    # a sync handler over its limit is buried (max_attempts=1) though its thread went on
    assert dead[slow_report].reason == "HandlerTimeout: handler exceeded 0.5s"
    assert _handled(appdb, "report") == [(slow_report, 1)]
    with psycopg.connect(appdb) as conn:
        assert conn.execute(
            "SELECT count(*), count(DISTINCT event_id) FROM audited"
        ).fetchone() == (
            50,
            50,
        )

    logs = _logs(err)
    timeouts = [r for r in logs if "timed out" in r["message"]]
    assert {(r["iid"], r["queue"], r["level"]) for r in timeouts} == {
        (slow_mail, "mail", "ERROR"),
        (slow_report, "report", "ERROR"),
    }
    assert all(r["logger"].startswith("pgmbus.handler.tests.workers.app.") for r in timeouts)
    retried = [r for r in logs if r.get("iid") == flaky and "retry in" in r["message"]]
    assert [r["attempt"] for r in retried] == [1, 2]
    assert all("ConnectionError: smtp down" in r["exc"] for r in retried)  # the traceback
    assert "Traceback" in retried[0]["exc"] and "tests/workers/app.py" in retried[0]["exc"]
    assert "tests.workers.app.jobs: 6 done, 2 retried, 2 dead" in out
    assert "tests.workers.app.audit: 50 handled" in out


@pytest.mark.slow
def test_sigterm_finishes_or_gives_back_the_work_in_hand(appdb: str) -> None:
    """On SIGTERM the worker stops claiming and answers 503; a message that finishes within
    the grace period is done, one that does not is given back (delivered again at once), so
    no message is lost; the process exits 0 with its report."""
    port = _free_port()
    with Bus(appdb) as bus:
        short = bus.post("jobs", {"sleep": 1.0})
        longer = bus.post("long", {"sleep": 30})
        with _worker(
            appdb, "--grace", "2.5", "--health", f"127.0.0.1:{port}", "--log-format", "json"
        ) as proc:
            _wait_until(
                lambda: (
                    {(s.qname, s.leased) for s in bus.stats() if s.leased}
                    == {
                        ("jobs", 1),
                        ("long", 1),
                    }
                )
            )
            assert _health(port)[0] == 200
            proc.send_signal(signal.SIGTERM)
            _wait_until(lambda: _health(port)[0] == 503, seconds=2)  # it has stopped claiming
            waiting = bus.post("jobs", {"n": 1})  # its NOTIFY wakes no slot: none claims it
            started = time.monotonic()
            out, err = proc.communicate(timeout=20)
            took = time.monotonic() - started
        assert proc.returncode == 0, out + err
        assert took < 5  # the grace period, not the 30 s handler
        jobs = _handled(appdb, "jobs")
        assert (short, 1) in jobs  # finished within the grace period
        assert _handled(appdb, "long") == []
        # the unfinished one is back in its queue, available now, for the next worker
        (again,) = bus.lease("long", lease=5)
        assert again.iid == longer and again.attempts == 2
        # The one posted after the stop is claimed by no new lease; a lease statement already
        # running at the stop may see it (it is let finish), and then it is handled, once.
        left = bus.lease("jobs", lease=5)
        assert sorted(jobs + [(m.iid, m.attempts) for m in left]) == sorted(
            [(short, 1), (waiting, 1)]
        )
    given_back = [r for r in _logs(err) if "given back at shutdown" in r["message"]]
    assert [r["iid"] for r in given_back] == [longer]
    assert "tests.workers.app.long: 0 done" in out and "1 given back" in out


def test_a_misconfigured_handler_fails_the_worker(appdb: str) -> None:
    """A handler on a queue that does not exist ends the process with exit 1 and the typed
    error, instead of a worker that runs and does nothing."""
    env = os.environ | {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "PGMBUS_DSN": appdb}
    done = subprocess.run(
        [sys.executable, "-m", "pgmbus", "worker", "tests.workers.app:broken"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "missing" in done.stdout + done.stderr


def test_two_processes_consume_a_group_exactly_once(appdb: str) -> None:
    """Two worker processes on one stream group, events published before and while they run:
    every event's row is written once, and both stop cleanly on SIGTERM."""
    target = "tests.workers.app:auditors"
    with psycopg.connect(appdb, autocommit=True) as conn:
        streams.publish_batch(conn, "orders", [{"i": i} for i in range(60)])
        with _worker(appdb, target=target) as one, _worker(appdb, target=target) as two:
            for start in range(60, 200, 20):
                streams.publish_batch(conn, "orders", [{"i": i} for i in range(start, start + 20)])
                time.sleep(0.05)
            _wait_until(lambda: conn.execute("SELECT count(*) FROM audited").fetchone() == (200,))
            time.sleep(0.5)  # a duplicate would show up now
            for proc in (one, two):
                proc.send_signal(signal.SIGTERM)
            outs = [proc.communicate(timeout=20) for proc in (one, two)]
        assert [p.returncode for p in (one, two)] == [0, 0], outs
        row = conn.execute("SELECT count(*), count(DISTINCT event_id) FROM audited").fetchone()
        assert row == (200, 200)
    handled = [
        int(line.split(": ")[1].split()[0])
        for out, _ in outs
        for line in out.splitlines()
        if "app.audit:" in line
    ]
    assert sum(handled) == 200, outs


def test_async_stream_handlers_run_by_pgmbus_worker_exactly_once(appdb: str) -> None:
    """Issue 16: "Streams get the same: `@bus.stream_handler(group, …)` and `pgmbus worker`
    runs them; an async streams client." -- an ``async def`` stream handler in two worker
    processes on one group: every event's row once (a failing event retried by the group, its
    failed attempts' writes undone), a clean stop on SIGTERM."""
    target = "tests.workers.app:aauditors"
    with psycopg.connect(appdb, autocommit=True) as conn:
        conn.execute("CREATE SEQUENCE aaudit_failures")
        conn.execute("SELECT mbus.configure_group('audit', retry_backoff => '0 s')")
        streams.publish_batch(conn, "orders", [{"i": i} for i in range(40)])
        streams.publish(conn, "orders", {"fail": 2})
        with _worker(appdb, target=target) as one, _worker(appdb, target=target) as two:
            streams.publish_batch(conn, "orders", [{"i": i} for i in range(40, 80)])
            _wait_until(lambda: conn.execute("SELECT count(*) FROM audited").fetchone() == (81,))
            time.sleep(0.5)  # a duplicate would show up now
            for proc in (one, two):
                proc.send_signal(signal.SIGTERM)
            outs = [proc.communicate(timeout=20) for proc in (one, two)]
        assert [p.returncode for p in (one, two)] == [0, 0], outs
        row = conn.execute("SELECT count(*), count(DISTINCT event_id) FROM audited").fetchone()
        assert row == (81, 81)
        assert conn.execute("SELECT last_value FROM aaudit_failures").fetchone() == (3,)
    lines = [line for out, _ in outs for line in out.splitlines() if "app.aaudit:" in line]
    assert sum(int(line.split(": ")[1].split()[0]) for line in lines) == 81, outs
    assert sum(int(line.split(", ")[1].split()[0]) for line in lines) == 2, outs
