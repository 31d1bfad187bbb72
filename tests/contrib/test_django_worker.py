"""``manage.py pgmbus_worker`` with the options of ``pgmbus worker``: several queues, a health
endpoint with /metrics, a grace period at SIGTERM, and the same usage errors."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pgmbus.queues import Bus
from tests.contrib.test_django import PROJECT, manage, manage_env, orders
from tests.processes import reap, stop, wait_until


@pytest.fixture
def django_dsn(make_db: Callable[..., str]) -> str:
    dsn = make_db(installed=False)
    manage(dsn, "migrate", "--no-input")
    with Bus(dsn) as bus:
        bus.create_queue("rush")
    return dsn


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def _metric(port: int, name: str, queue: str) -> float:
    """The value of the worker's series ``name`` for ``queue`` (-1 when absent)."""
    for family in text_string_to_metric_families(_get(port, "/metrics")[1]):
        for s in family.samples:
            if s.name == name and s.labels.get("queue") == queue:
                return float(s.value)
    return -1


def _add_order(dsn: str, item: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "INSERT INTO orders_order (item, shipped) VALUES (%s, false) RETURNING id", (item,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def _worker(dsn: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "manage.py", "pgmbus_worker", "orders.handlers:ship", *args],
        cwd=PROJECT,
        env=manage_env(dsn),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_several_queues_health_metrics_and_a_graceful_stop(django_dsn: str) -> None:
    port = _free_port()
    book, pen, lamp = (_add_order(django_dsn, item) for item in ("book", "pen", "lamp"))
    with Bus(django_dsn) as bus:
        bus.post("orders", {"order": book})
        bus.post("rush", {"order": pen})
    worker = _worker(
        django_dsn,
        *("--queue", "orders", "-q", "rush", "--poll", "0.2"),
        *("--health", f"127.0.0.1:{port}", "--grace", "20"),
    )
    try:
        wait_until(
            lambda: [s for _, s in orders(django_dsn)][:2] == [True, True],
            proc=worker,
            what="both queues consumed",
        )
        status, body = _get(port, "/")
        assert status == 200 and '"status": "ok"' in body, body
        assert body.count("orders.handlers.ship[") == 2, body  # one loop per queue
        assert _metric(port, "pgmbus_worker_successes_total", "orders") == 1
        assert _metric(port, "pgmbus_worker_successes_total", "rush") == 1
        # a job in hand at SIGTERM finishes within the grace period, and is acked
        with Bus(django_dsn) as bus:
            bus.post("rush", {"order": lamp, "sleep": 1.5})
        wait_until(
            lambda: _metric(port, "pgmbus_worker_in_flight", "rush") == 1,
            proc=worker,
            what="the slow job started",
        )
        done = stop(worker)
    finally:
        reap(worker)
    assert done.returncode == 0, done.stderr
    assert orders(django_dsn) == [("book", True), ("pen", True), ("lamp", True)]
    assert "given back" not in done.stderr.replace("0 given back", "")
    assert "ship[rush]: 2 done" in done.stdout, done.stdout
    with Bus(django_dsn) as bus:
        assert sum(s.depth for q in ("orders", "rush") for s in bus.stats(q)) == 0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--queue", "orders", "--health", "localhost"), "expected HOST:PORT"),
        (("--queue", "orders", "--grace", "soon"), "--grace: invalid float value"),
        (("--health", "127.0.0.1:0"), "--queue"),
    ],
)
def test_bad_options_are_usage_errors(args: tuple[str, ...], says: str) -> None:
    # refused while parsing the command line: no database is reached (nor needed)
    worker = _worker("host=127.0.0.1 port=1 dbname=unused connect_timeout=1", *args)
    try:
        done = stop(worker, None)
    finally:
        reap(worker)
    assert done.returncode == 2 and says in done.stderr, done.stderr


def test_a_missing_queue_is_named_and_nothing_starts(django_dsn: str) -> None:
    worker = _worker(django_dsn, "-q", "orders", "-q", "nothere", "--consumer", "default")
    try:
        done = stop(worker, None)
    finally:
        reap(worker)
    assert done.returncode == 1, done.stderr
    assert "the worker cannot start: queue 'nothere' does not exist" in done.stderr
    assert "pgmbus queue create nothere" in done.stderr and "Traceback" not in done.stderr
    assert "pgmbus worker:" not in done.stdout  # it did not start


@pytest.mark.slow
def test_the_process_pool_sets_django_up_in_its_children_and_kills_past_the_limit(
    django_dsn: str,
) -> None:
    """``--pool process``: the handler (whose module imports models) runs in a child where
    Django is set up; past ``--timeout`` its child is killed and the message buried."""
    book, lamp = (_add_order(django_dsn, item) for item in ("book", "lamp"))
    with Bus(django_dsn) as bus:
        bus.post("rush", {"order": book})
        late = bus.post("rush", {"order": lamp, "sleep": 30})
        worker = _worker(
            django_dsn,
            *("-q", "rush", "--pool", "process", "--timeout", "1", "--max-attempts", "1"),
            *("--poll", "0.2", "--grace", "2"),
        )
        try:
            wait_until(lambda: len(bus.dmq()) == 1, proc=worker, what="the late one buried")
            done = stop(worker)
        finally:
            reap(worker)
        (dead,) = bus.dmq()
    assert done.returncode == 0, done.stderr
    assert dead.iid == late and dead.reason == "HandlerTimeout: handler exceeded 1.0s"
    assert orders(django_dsn) == [("book", True), ("lamp", False)]
