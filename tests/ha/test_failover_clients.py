"""`pgmbus bridge` and a Celery worker through a failover (`make chaos`), with a synchronous and
with an asynchronous standby, the checker's lost / duplicated / phantom per workload.

- bridge: producers post (client iids) on the source database, a ``pgmbus bridge`` process
  moves the route's messages to the destination database, a transactional consumer takes them
  there. One database is on the pg_auto_failover cluster (its multi-host DSN: the bridge's
  ``--dsn`` when it is the source, the link's conninfo when it is the destination), the other on
  a server that does not fail; the primary is killed (postmaster and keeper, -9) mid-load.
  Promised with the synchronous standby: exactly once, end to end.
- celery: a real ``celery worker`` on a ``pgmbus://`` URL made from the multi-host DSN
  (``url_from_dsn``: the hosts and ports go in the query string) runs tasks that a Celery app
  in this process sends, while the primary is killed. Celery's publish carries no iid and its
  tasks are acknowledged late: at least once, nothing acknowledged lost.

The tables go to .chaos/ha-clients-summary.md (docs/guarantees.md quotes them).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from celery import Celery
from psycopg import sql

from pgmbus import schema
from pgmbus.contrib.kombu_transport import url_from_dsn
from pgmbus.devdb import DevCluster
from pgmbus.queues import Bus
from pgmbus.reconnect import Backoff
from pgmbus.testing.chaos import History, Report, check, format_table
from pgmbus.testing.chaos.history import Unknown
from tests.chaos.harness import RESULTS_DDL
from tests.chaos.processes import Processes
from tests.chaos.scenarios import _dead, _deliveries, _max_ack_gaps, _max_gaps, _queue_depth
from tests.chaos.workloads import QueueProducer, TxQueueConsumer, Workload, wait_until
from tests.contrib.test_django import PROJECT, manage
from tests.ha.harness import Failover, HAChaosCluster

pytestmark = [pytest.mark.chaos]

# the load before and after the kill; the failover itself takes 5-15 s with the test settings
BEFORE_S = 3.0
AFTER_S = float(os.environ.get("CHAOS_HA_CLIENTS_AFTER_S", "15"))
SUMMARY = Path(".chaos") / "ha-clients-summary.md"
REPORTS: list[Report] = []
NOTES: list[str] = []
QUEUE = "orders"


@pytest.fixture(scope="module", params=["sync", "async"])
def mode_cluster(request: pytest.FixtureRequest) -> Iterator[HAChaosCluster]:
    cluster = HAChaosCluster(synchronous=request.param == "sync").start()
    try:
        yield cluster
    finally:
        cluster.stop()
        SUMMARY.parent.mkdir(exist_ok=True)
        SUMMARY.write_text(format_table(REPORTS) + "\n\n" + "\n".join(f"- {n}" for n in NOTES))


@pytest.fixture(scope="module")
def steady_server() -> Iterator[DevCluster]:
    """A server that never fails: the other side of the bridge."""
    home = Path(tempfile.mkdtemp(prefix="pgmbus-ha-steady-"))
    home.chmod(0o755)
    server = DevCluster(home, ephemeral=True)
    server.start()
    try:
        yield server
    finally:
        server.destroy()
        shutil.rmtree(home, ignore_errors=True)


def _steady_database(server: DevCluster) -> str:
    # database names are unique across an exchange: the HA side's are chaos_<hex>
    name = f"steady_{os.urandom(5).hex()}"
    with psycopg.connect(server.dsn("postgres"), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = server.dsn(name)
    with psycopg.connect(dsn) as conn:
        schema.install(conn)
        conn.execute(RESULTS_DDL)
    return dsn


def _route_pending(source: str) -> int:
    """What the route has still to move (its consumer's backlog, read and rolled back)."""
    with psycopg.connect(source) as conn, conn.transaction(force_rollback=True):
        row = conn.execute(
            "SELECT jsonb_array_length(mbus.exchange_take('onward', 1000000))"
        ).fetchone()
    return int(row[0]) if row else 0


class BridgeProcess(Processes):
    """``pgmbus bridge --dsn <source>`` (one process, restarted should it exit)."""

    def __init__(self, workload: str, dsn: str) -> None:
        super().__init__(workload, dsn, count=1)

    def argv(self, index: int) -> list[str]:
        return ["bridge", "--dsn", self.dsn, "--batch", "10", "--poll", "0.1"]


class CeleryWorker(Processes):
    """``celery -A tests.ha.celery_failover_app worker`` (threads, 4 at a time)."""

    program = ("-m", "celery")

    def argv(self, index: int) -> list[str]:
        return [
            "-A",
            "tests.ha.celery_failover_app",
            "worker",
            "--pool",
            "threads",
            "--concurrency",
            "4",
            "--queues",
            "celery",
            "--loglevel",
            "WARNING",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "--hostname",
            f"failover{index}@%h",
        ]


class DjangoWorker(Processes):
    """``manage.py pgmbus_worker orders.handlers:record`` of the test project."""

    program: tuple[str, ...] = (str(PROJECT / "manage.py"),)

    def __init__(self, workload: str, dsn: str, queue: str) -> None:
        super().__init__(workload, dsn, count=1)
        self.queue = queue

    def argv(self, index: int) -> list[str]:
        return ["pgmbus_worker", "orders.handlers:record", "--queue", self.queue, "--lease", "3"]

    def environment(self) -> dict[str, str]:
        return {"PGMBUS_DJANGO_DSN": self.dsn, "DJANGO_SETTINGS_MODULE": "djproject.settings"}


class CeleryProducer(Workload):
    """Send ``failover.record(<name>/<n>)`` through Celery; an error is an unknown outcome
    (Kombu retried the publish, which carries no iid), and the next value follows."""

    def __init__(self, history: History, workload: str, name: str, dsn: str) -> None:
        super().__init__(name)
        self.history, self.workload, self.dsn = history, workload, dsn

    def body(self) -> None:
        app = Celery("failover-producer", broker=url_from_dsn(self.dsn))
        app.conf.broker_connection_retry_on_startup = True
        backoff = Backoff(cap=1.0)
        seq = 0
        try:
            while not self.stop_event.is_set():
                seq += 1
                value = f"{self.name}/{seq}"
                sent = False
                with self.history.op(self.workload, self.name, "enqueue", value):
                    try:
                        app.send_task("failover.record", args=[value], queue="celery")
                    except Exception as exc:
                        raise Unknown(str(exc)) from exc
                    sent = True
                if sent:
                    backoff.reset()
                    time.sleep(0.03)
                else:
                    self.stop_event.wait(backoff.next())
        finally:
            app.close()


def _failover_soon(
    cluster: HAChaosCluster, done: list[Failover], working: Callable[[], bool]
) -> threading.Thread:
    """The failover, once the processes work (a start under load takes seconds: a process
    started during a failover is refused by its start-up check and exits) and ``BEFORE_S``."""

    def run() -> None:
        if not wait_until(working, 60):
            raise RuntimeError("the clients did not start working")
        time.sleep(BEFORE_S)
        done.append(cluster.failover(rejoin=True))

    thread = threading.Thread(target=run, name="failover", daemon=True)
    thread.start()
    return thread


def _record(
    cluster: HAChaosCluster, label: str, report: Report, failovers: list[Failover], notes: str
) -> None:
    report.fault = f"failover ({cluster.mode})"
    REPORTS.append(report)
    NOTES.append(
        f"{label} ({cluster.mode}): "
        + ", ".join(f"{f.to_primary_s} s to a primary, {f.rejoined_s} s back" for f in failovers)
        + f"; {notes}; load {os.getloadavg()[0]:.0f}"
    )


@pytest.mark.timeout(600)
@pytest.mark.parametrize("side", ["source", "destination"])
def test_bridge_through_a_failover(
    mode_cluster: HAChaosCluster, steady_server: DevCluster, side: str
) -> None:
    ha_dsn = mode_cluster.new_database()
    steady_dsn = _steady_database(steady_server)
    source, destination = (ha_dsn, steady_dsn) if side == "source" else (steady_dsn, ha_dsn)
    for dsn in (source, destination):
        with Bus(dsn, max_size=1, rotate_every=None) as bus:
            bus.create_queue(QUEUE)
    with psycopg.connect(source, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_link('next', %s)", (destination,))
        conn.execute("SELECT mbus.create_route('onward', 'next', %s, %s)", (QUEUE, QUEUE))
    history = History()
    producers: list[Workload] = [
        QueueProducer(history, "bridge", f"b-{n}", source, QUEUE, transactional=tx, max_ops=10**6)
        for n, tx in (("auto", False), ("tx", True))
    ]
    bridge = BridgeProcess("bridge", source)
    consumer = TxQueueConsumer("bridge", destination, QUEUE)
    failovers: list[Failover] = []
    for w in (bridge, consumer, *producers):
        w.start()
    try:
        killer = _failover_soon(
            mode_cluster, failovers, lambda: bool(_deliveries(destination, "bridge"))
        )
        killer.join(300)
        time.sleep(AFTER_S)
        end = datetime.now(UTC)
    finally:
        for w in producers:
            w.stop()
    drained = wait_until(
        lambda: _route_pending(source) == 0 and _queue_depth(destination, QUEUE) == 0, 90
    )
    time.sleep(0.5)  # a commit in flight
    consumer.stop()
    bridge.stop()
    crashed = {w.name: w.crashed for w in (bridge, consumer, *producers) if w.crashed}
    report = check(
        "bridge",
        history.ops(),
        _deliveries(destination, "bridge"),
        dead=_dead(source, QUEUE) + _dead(destination, QUEUE),
        exactly_once=True,
        idempotent_producer=True,
        faults_injected=len(failovers),
    )
    _record(
        mode_cluster,
        f"bridge, the {side} fails over",
        report,
        failovers,
        f"longest time without an acknowledged post {_max_ack_gaps(history)}, "
        f"without a delivery {_max_gaps(destination, end)}",
    )
    assert len(failovers) == 1
    assert not crashed, crashed
    assert bridge.started == 1, "the bridge went through the failover without exiting"
    assert drained, (_route_pending(source), _queue_depth(destination, QUEUE), bridge.started)
    if mode_cluster.mode == "sync":
        assert report.acknowledged > 0, report
        assert report.valid, (report, report.examples)


def _delivered(dsn: str, values: set[str]) -> bool:
    got = {d.value for d in _deliveries(dsn, "celery")}
    return values <= got


@pytest.mark.timeout(600)
def test_celery_worker_through_a_failover(mode_cluster: HAChaosCluster) -> None:
    dsn = mode_cluster.new_database()
    history = History()
    worker = CeleryWorker("celery", dsn, count=1)
    producers = [CeleryProducer(history, "celery", f"c{i}", dsn) for i in range(2)]
    failovers: list[Failover] = []
    worker.start()
    for w in producers:
        w.start()
    try:
        killer = _failover_soon(mode_cluster, failovers, lambda: bool(_deliveries(dsn, "celery")))
        killer.join(300)
        time.sleep(AFTER_S)
        end = datetime.now(UTC)
    finally:
        for w in producers:
            w.stop()
    acked = {o.value for o in history.ops("celery") if o.type == "ok"}
    drained = wait_until(lambda: _delivered(dsn, acked), 120)
    worker.stop()
    crashed = {w.name: w.crashed for w in (worker, *producers) if w.crashed}
    report = check(
        "celery",
        history.ops(),
        _deliveries(dsn, "celery"),
        exactly_once=False,
        faults_injected=len(failovers),
    )
    _record(
        mode_cluster,
        "celery worker",
        report,
        failovers,
        f"longest time without an acknowledged send {_max_ack_gaps(history)}, "
        f"without a run {_max_gaps(dsn, end)}, worker restarts {worker.started - 1}",
    )
    assert len(failovers) == 1
    assert not crashed, crashed
    assert worker.started == 1, "the worker went through the failover without exiting"
    if mode_cluster.mode == "sync":
        assert report.acknowledged > 0, report
        assert drained, "every acknowledged task ran"
        assert report.valid, (report, report.examples)


@pytest.mark.timeout(600)
def test_django_worker_through_a_failover(mode_cluster: HAChaosCluster) -> None:
    """``manage.py pgmbus_worker`` on a Django database given as the multi-host DSN (HOST and
    PORT lists, OPTIONS target_session_attrs): the same loop as ``pgmbus worker``."""
    name = f"django_{os.urandom(5).hex()}"
    with psycopg.connect(mode_cluster.ha.dsn("postgres"), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = mode_cluster.ha.dsn(name)
    manage(dsn, "migrate", "--no-input")  # installs the mbus schema
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(RESULTS_DDL)
    with Bus(dsn, max_size=1, rotate_every=None) as bus:
        bus.create_queue(QUEUE)
    history = History()
    producers: list[Workload] = [
        QueueProducer(history, "django", f"d-{n}", dsn, QUEUE, transactional=tx, max_ops=10**6)
        for n, tx in (("auto", False), ("tx", True))
    ]
    worker = DjangoWorker("django", dsn, QUEUE)
    failovers: list[Failover] = []
    for w in (worker, *producers):
        w.start()
    try:
        killer = _failover_soon(mode_cluster, failovers, lambda: bool(_deliveries(dsn, "django")))
        killer.join(300)
        time.sleep(AFTER_S)
        end = datetime.now(UTC)
    finally:
        for w in producers:
            w.stop()
    drained = wait_until(lambda: _queue_depth(dsn, QUEUE) == 0, 90)
    time.sleep(0.5)  # an ack in flight
    worker.stop()
    crashed = {w.name: w.crashed for w in (worker, *producers) if w.crashed}
    report = check(
        "django",
        history.ops(),
        _deliveries(dsn, "django"),
        dead=_dead(dsn, QUEUE),
        exactly_once=False,
        idempotent_producer=True,
        faults_injected=len(failovers),
    )
    _record(
        mode_cluster,
        "django pgmbus_worker",
        report,
        failovers,
        f"longest time without an acknowledged post {_max_ack_gaps(history)}, "
        f"without a delivery {_max_gaps(dsn, end)}, worker restarts {worker.started - 1}",
    )
    assert len(failovers) == 1
    assert not crashed, crashed
    assert worker.started == 1, "the worker went through the failover without exiting"
    assert drained, _queue_depth(dsn, QUEUE)
    if mode_cluster.mode == "sync":
        assert report.acknowledged > 0, report
        assert report.valid, (report, report.examples)
