"""Scenarios: workloads of one engine run under one fault, then healed, drained and checked."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg

from pgmbus import streams
from pgmbus.queues import Bus
from pgmbus.testing.chaos import Delivery, History, Report, check
from tests.chaos.harness import ChaosCluster, Periodic
from tests.chaos.http_workloads import HttpConsumer, HttpProducer, HttpTimerCreator, api_key
from tests.chaos.processes import (
    AppProcesses,
    DispatcherProcesses,
    Processes,
    ServeProcess,
    WorkerProcesses,
)
from tests.chaos.spark_workload import SPARK_GROUP, SparkQuery
from tests.chaos.timers_workloads import DispatcherThread, Receiver, TimerCreator, add_client
from tests.chaos.workloads import (
    LeaseQueueWorker,
    QueueProducer,
    StreamGroupWorker,
    StreamPublisher,
    TxQueueConsumer,
    Workload,
    wait_until,
)

log = logging.getLogger("pgmbus.chaos")

TX_QUEUE, LEASE_QUEUE, TOPIC, GROUP = "chaos_tx", "chaos_lease", "chaos", "chaos_g"
SLOTS_GROUP, SUBS_GROUP = "chaos_slots", "chaos_subs"  # a slotted group; one of subscriptions
SUBS_KEY = "s0"  # the subscription matches the events of this key only
XMIN_HOLD_S = float(os.environ.get("CHAOS_XMIN_HOLD_S", "60"))


@dataclass
class Fault:
    """A fault: started before the workloads' main phase, stopped (healed) after it."""

    name: str
    start: Callable[[ChaosCluster, str, list[Workload]], list[Periodic]]
    client_options: dict[str, str] = field(default_factory=dict)


@dataclass
class Outcome:
    """What a scenario produced: one report per workload, and what went wrong around it."""

    reports: list[Report]
    crashed: dict[str, str]
    fault_errors: list[str]
    notes: dict[str, Any]


def _none(_c: ChaosCluster, _dsn: str, _w: list[Workload]) -> list[Periodic]:
    return []


def _kill9(every: float) -> Callable[[ChaosCluster, str, list[Workload]], list[Periodic]]:
    def start(c: ChaosCluster, _dsn: str, _w: list[Workload]) -> list[Periodic]:
        p = Periodic("kill-9", every, c.kill9_and_restart)
        p.start()
        return [p]

    return start


def _proxy_cuts(c: ChaosCluster, _dsn: str, _w: list[Workload]) -> list[Periodic]:
    assert c.proxy is not None
    c.proxy.settings.random_cut = 0.002
    proxy = c.proxy
    p = Periodic("cut-all", 1.5, proxy.cut_all)
    p.start()
    return [p]


def _ambiguous(c: ChaosCluster, _dsn: str, _w: list[Workload]) -> list[Periodic]:
    assert c.proxy is not None
    c.proxy.settings.ambiguous_commit = 0.1
    c.proxy.settings.ambiguous_statement = 0.02
    return []


def _stall(c: ChaosCluster, _dsn: str, _w: list[Workload]) -> list[Periodic]:
    assert c.proxy is not None
    proxy = c.proxy

    def stall_once() -> None:
        proxy.stall()
        time.sleep(1.5)
        proxy.resume()

    p = Periodic("stall", 2.0, stall_once)
    p.start()
    return [p]


TERMINATE_LISTENERS = """
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle'
  AND (query ILIKE 'LISTEN%%' OR query ILIKE '%%await_queue%%')
"""


def _terminate_listeners(c: ChaosCluster, dsn: str, _w: list[Workload]) -> list[Periodic]:
    def terminate() -> int:
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                row = conn.execute(TERMINATE_LISTENERS).fetchone()
        except psycopg.OperationalError:
            return 0  # the server is down (mixed faults): no listener to terminate
        return int(row[0]) if row else 0

    p = Periodic("terminate-listeners", 0.7, terminate)
    p.start()
    return [p]


def _hold_xmin(
    seconds: float,
) -> Callable[[ChaosCluster, str, list[Workload]], list[Periodic]]:
    def start(c: ChaosCluster, dsn: str, _w: list[Workload]) -> list[Periodic]:
        held: list[float] = []

        def hold() -> int:
            if held:
                return 0
            with psycopg.connect(dsn) as conn:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                conn.execute("SELECT txid_current()")  # an xid and a snapshot, held
                held.append(seconds)
                time.sleep(seconds)
            return 1

        p = Periodic("hold-xmin", 0.01, hold)  # once, at the start: xmin held `seconds`
        p.start()
        return [p]

    return start


LOCK_QUEUES = "LOCK TABLE mbus.q_chaos_tx, mbus.q_chaos_lease IN ACCESS EXCLUSIVE MODE"
LOCK_CURSORS = "LOCK TABLE mbus.stream_cursors, mbus.timer_callbacks IN EXCLUSIVE MODE"


def _lock_holder(c: ChaosCluster, dsn: str, _w: list[Workload]) -> list[Periodic]:
    def lock() -> None:
        with psycopg.connect(dsn) as conn:
            conn.execute(LOCK_QUEUES)
            conn.execute(LOCK_CURSORS)
            time.sleep(0.6)

    p = Periodic("lock-tables", 0.6, lock)
    p.start()
    return [p]


def _processes(workloads: list[Workload]) -> Processes:
    found = [w for w in workloads if isinstance(w, Processes)]
    if not found:
        raise ValueError("this fault needs processes (engine 'worker', 'app' or 'dispatcher')")
    return found[0]


def _kill_worker(_c: ChaosCluster, _dsn: str, workloads: list[Workload]) -> list[Periodic]:
    p = Periodic("kill-worker", 1.5, _processes(workloads).kill_one)
    p.start()
    return [p]


def _stop_worker(_c: ChaosCluster, _dsn: str, workloads: list[Workload]) -> list[Periodic]:
    procs = _processes(workloads)
    p = Periodic("stop-worker", 0.5, lambda: procs.freeze_one(4.0))  # lease: 3 s
    p.start()
    return [p]


def _mixed(c: ChaosCluster, dsn: str, workloads: list[Workload]) -> list[Periodic]:
    """Several faults at once: proxy cuts, ambiguous commits, terminated listeners, a
    ``kill -9`` of the postmaster every 4 s and, with processes, a ``kill -9`` of one every 2 s."""
    assert c.proxy is not None
    c.proxy.settings.ambiguous_commit = 0.05
    injectors = _proxy_cuts(c, dsn, workloads)
    injectors += _terminate_listeners(c, dsn, workloads)
    injectors += _kill9(4.0)(c, dsn, workloads)
    if any(isinstance(w, Processes) for w in workloads):
        p = Periodic("kill-process", 2.0, _processes(workloads).kill_one)
        p.start()
        injectors.append(p)
    return injectors


FAULTS: dict[str, Fault] = {
    "none": Fault("none", _none),
    "kill-9": Fault("kill-9", _kill9(3.0)),
    "proxy-cuts": Fault("proxy-cuts", _proxy_cuts),
    "ambiguous-commit": Fault("ambiguous-commit", _ambiguous),
    "stall": Fault("stall", _stall),
    "terminate-listeners": Fault("terminate-listeners", _terminate_listeners),
    "hold-xmin": Fault("hold-xmin", _hold_xmin(XMIN_HOLD_S)),
    "timeouts": Fault(
        "timeouts",
        _lock_holder,
        client_options={"statement_timeout": "300", "lock_timeout": "100"},
    ),
    "mixed": Fault("mixed", _mixed),
}
# faults of worker processes (engine "worker": `pgmbus worker` subprocesses)
PROCESS_FAULTS: dict[str, Fault] = {
    "kill-worker": Fault("kill-worker", _kill_worker),
    "stop-worker": Fault("stop-worker", _stop_worker),
}


def _setup(dsn: str) -> None:
    with Bus(dsn, max_size=1, rotate_every=None) as bus:
        bus.create_queue(TX_QUEUE)
        bus.create_queue(LEASE_QUEUE)
    with psycopg.connect(dsn, autocommit=True) as conn:
        streams.create_group(conn, GROUP, start="now")
        streams.create_group(conn, SLOTS_GROUP, start="now", slots=2)
        streams.create_group(conn, SUBS_GROUP, start="now")
        streams.subscribe(conn, SUBS_GROUP, "e.key = s.params->>'key'", {"key": SUBS_KEY})


def _deliveries(dsn: str, workload: str) -> list[Delivery]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT value, message FROM chaos_results WHERE workload = %s ORDER BY id",
            (workload,),
        ).fetchall()
    return [Delivery(str(v), str(m)) for v, m in rows]


def _dead(dsn: str, queue: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT data->>'v' FROM mbus.dmq WHERE qname = %s", (queue,)).fetchall()
    return [str(r[0]) for r in rows]


def _stream_dead(dsn: str, group: str = GROUP) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [str(r["payload"]["v"]) for r in streams.dmq(conn, group)]


def _queue_depth(dsn: str, queue: str) -> int:
    with Bus(dsn, max_size=1, rotate_every=None) as bus:
        return sum(s.depth for s in bus.stats(queue))


MAX_GAP = """
SELECT workload, extract(epoch FROM max(gap))::float8 FROM (
    SELECT workload, at - lag(at) OVER (PARTITION BY workload ORDER BY id) AS gap
    FROM chaos_results WHERE at < %s) AS g
GROUP BY workload
"""


def _max_gaps(dsn: str, before: Any) -> dict[str, float]:
    """Per workload, the longest time between two deliveries before ``before``."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(MAX_GAP, (before,)).fetchall()
    return {str(w): round(float(g or 0.0), 2) for w, g in rows}


def _max_ack_gaps(history: History) -> dict[str, float]:
    """Per producer, the longest time without an acknowledged operation (unavailability)."""
    times: dict[str, list[float]] = {}
    for op in history.ops():
        if op.type == "ok":
            times.setdefault(op.process, []).append(op.time)
    return {
        p: round(max((b - a for a, b in itertools.pairwise(t)), default=0.0), 2)
        for p, t in sorted(times.items())
    }


def _timers_done(dsn: str, receiver: Receiver) -> bool:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FROM mbus.timer_callbacks"
        ).fetchone()
    assert row is not None
    with receiver.lock:
        called = len(set(receiver.calls))
    return int(row[0]) == 0 and called >= int(row[1]) - len(_timers_failed(dsn))


def _timers_failed(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT context->>'v' FROM mbus.timer_callbacks WHERE status <> 'notified'"
        ).fetchall()
    return [str(r[0]) for r in rows]


def _reachable(dsn: str) -> bool:
    with psycopg.connect(dsn, connect_timeout=2) as conn:
        conn.execute("SELECT 1")
    return True


STREAM_CAUGHT_UP = """
SELECT (SELECT count(*) FROM mbus.events WHERE topic = %(topic)s) = ALL (
           SELECT (SELECT count(DISTINCT value) FROM chaos_results AS r WHERE r.workload = w)
           FROM unnest(ARRAY['stream', 'stream-slots']) AS w)
   AND (SELECT count(*) FROM mbus.events WHERE topic = %(topic)s AND key = %(key)s)
       = (SELECT count(DISTINCT value) FROM chaos_results WHERE workload = 'stream-subs')
"""


SPARK_CAUGHT_UP = """
SELECT (SELECT count(*) FROM mbus.events WHERE topic = %s)
     = (SELECT count(DISTINCT value) FROM chaos_results WHERE workload = 'spark')
"""


def _spark_caught_up(dsn: str) -> bool:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(SPARK_CAUGHT_UP, (TOPIC,)).fetchone()
    return bool(row and row[0])


APP_CAUGHT_UP = """
SELECT (SELECT count(*) FROM mbus.events WHERE topic = %s) = ALL (
           SELECT (SELECT count(DISTINCT value) FROM chaos_results AS r WHERE r.workload = w)
           FROM unnest(ARRAY['app-stream', 'app-slots']) AS w)
"""


def _app_caught_up(dsn: str) -> bool:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(APP_CAUGHT_UP, (TOPIC,)).fetchone()
    return bool(row and row[0])


def _process_notes(w: Workload) -> dict[str, int]:
    assert isinstance(w, Processes)
    return {"processes_started": w.started, "logged_warnings": w.warnings}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(base: str) -> bool:
    try:
        return httpx.get(base + "/healthz", timeout=2.0).status_code == 200
    except httpx.TransportError:
        return False


def _stream_caught_up(dsn: str) -> bool:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(STREAM_CAUGHT_UP, {"topic": TOPIC, "key": SUBS_KEY}).fetchone()
    return bool(row and row[0])


def _stream_reports(dsn: str, history: History, fault: str, injected: int) -> list[Report]:
    """The three stream groups: plain, slotted (2 slots), subscriptions (events of one key)."""
    ops = history.ops("stream")
    subs_ops = [
        dataclasses.replace(o, workload="stream-subs")
        for o in ops
        if o.value.startswith(SUBS_KEY + "/")
    ]
    reports = []
    for workload, group, recorded in (
        ("stream", GROUP, ops),
        (
            "stream-slots",
            SLOTS_GROUP,
            [dataclasses.replace(o, workload="stream-slots") for o in ops],
        ),
        ("stream-subs", SUBS_GROUP, subs_ops),
    ):
        reports.append(
            check(
                workload,
                recorded,
                _deliveries(dsn, workload),
                dead=_stream_dead(dsn, group),
                exactly_once=True,
                ordered=True,
                fault=fault,
                faults_injected=injected,
            )
        )
    return reports


def run_scenario(
    cluster: ChaosCluster,
    engine: str,
    fault_name: str,
    *,
    duration: float,
    ops_per_producer: int = 100_000,
    rate: float = 60.0,
    drain_timeout: float = 60.0,
    spark: Any = None,
) -> Outcome:
    """Run ``engine``'s workloads ("queue" or "stream") for ``duration`` seconds under the
    fault, heal, wait for the consumers to drain (bounded), stop everything and check."""
    fault = FAULTS.get(fault_name) or PROCESS_FAULTS[fault_name]
    if fault_name == "hold-xmin":  # the workloads run while the transaction holds xmin
        duration = max(duration, XMIN_HOLD_S + 1.0)
    dsn = cluster.new_database()
    _setup(dsn)
    via = cluster.via_proxy(dsn, **fault.client_options)
    history = History()
    workloads: list[Workload] = []
    if engine == "queue":
        for name, tx in (("auto", False), ("tx", True)):
            workloads.append(
                QueueProducer(
                    history,
                    "queue-tx",
                    f"qt-{name}",
                    via,
                    TX_QUEUE,
                    transactional=tx,
                    max_ops=ops_per_producer,
                    rate=rate,
                )
            )
            workloads.append(
                QueueProducer(
                    history,
                    "queue-lease",
                    f"ql-{name}",
                    via,
                    LEASE_QUEUE,
                    transactional=tx,
                    max_ops=ops_per_producer,
                    rate=rate,
                )
            )
        consumers: list[Workload] = [
            TxQueueConsumer("queue-tx", via, TX_QUEUE),
            LeaseQueueWorker("queue-lease", via, LEASE_QUEUE),
        ]
    elif engine == "stream":
        workloads += [
            StreamPublisher(
                history, "stream", f"s{i}", via, TOPIC, max_ops=ops_per_producer, rate=rate
            )
            for i in range(2)
        ]
        consumers = [
            StreamGroupWorker("stream", via, GROUP),
            StreamGroupWorker("stream-slots", via, SLOTS_GROUP, slot=0),
            StreamGroupWorker("stream-slots", via, SLOTS_GROUP, slot=1),
            StreamGroupWorker("stream-subs", via, SUBS_GROUP, subscriptions=True),
        ]
    elif engine == "spark":
        with psycopg.connect(dsn, autocommit=True) as conn:
            streams.create_group(conn, SPARK_GROUP, start="now")
        workloads += [
            StreamPublisher(
                history, "spark", f"s{i}", via, TOPIC, max_ops=ops_per_producer, rate=rate
            )
            for i in range(2)
        ]
        consumers = [SparkQuery("spark", via, TOPIC, spark)]
    elif engine == "timers":
        receiver = Receiver()
        client_id = add_client(dsn)
        workloads += [
            TimerCreator(
                history,
                "timers",
                f"t{i}",
                via,
                client_id,
                receiver.url,
                max_ops=ops_per_producer,
                rate=rate,
            )
            for i in range(2)
        ]
        consumers = [DispatcherThread("timers", via)]
    elif engine == "app":
        for name, tx in (("auto", False), ("tx", True)):
            workloads.append(
                QueueProducer(
                    history,
                    "app-queue",
                    f"qa-{name}",
                    via,
                    LEASE_QUEUE,
                    transactional=tx,
                    max_ops=ops_per_producer,
                    rate=rate,
                )
            )
        workloads += [
            StreamPublisher(
                history, "app-stream", f"s{i}", via, TOPIC, max_ops=ops_per_producer, rate=rate
            )
            for i in range(2)
        ]
        consumers = [AppProcesses("app", via)]
    elif engine == "dispatcher":
        receiver = Receiver()
        client_id = add_client(dsn)
        workloads += [
            TimerCreator(
                history,
                "dispatcher",
                f"t{i}",
                via,
                client_id,
                receiver.url,
                max_ops=ops_per_producer,
                rate=rate,
            )
            for i in range(2)
        ]
        consumers = [DispatcherProcesses("dispatcher", via)]
    elif engine == "serve":
        receiver = Receiver()
        key = api_key(dsn)
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        server = ServeProcess("serve", via, port)
        server.start()
        # a start takes over 30 s on 2 cores at load 30 (seen with the HA scenarios)
        if not wait_until(lambda: _healthy(base), 90):
            server.stop()
            raise RuntimeError("pgmbus serve did not start")
        workloads += [
            HttpTimerCreator(
                history,
                "serve-timers",
                f"ht{i}",
                base,
                key,
                receiver.url,
                max_ops=ops_per_producer,
                rate=rate / 2,
            )
            for i in range(2)
        ]
        workloads += [
            HttpProducer(
                history,
                "serve",
                f"h{i}",
                base,
                key,
                LEASE_QUEUE,
                max_ops=ops_per_producer,
                rate=rate,
            )
            for i in range(2)
        ]
        consumers = [server, HttpConsumer("serve", base, key, dsn, LEASE_QUEUE)]
    elif engine == "worker":
        for name, tx in (("auto", False), ("tx", True)):
            workloads.append(
                QueueProducer(
                    history,
                    "queue-worker",
                    f"qw-{name}",
                    via,
                    LEASE_QUEUE,
                    transactional=tx,
                    max_ops=ops_per_producer,
                    rate=rate,
                )
            )
        consumers = [WorkerProcesses("queue-worker", via, LEASE_QUEUE)]
    else:
        raise ValueError(engine)
    injectors: list[Periodic] = []
    try:
        for w in consumers + workloads:
            if not w.is_alive() and w.ident is None:
                w.start()
        injectors = fault.start(cluster, dsn, consumers)
        time.sleep(duration)
        end_of_faults = datetime.now(UTC)
        end_of_faults_mono = time.monotonic()
    finally:
        for w in workloads:  # producers first: no new values while healing
            w.stop()
        fault_errors: list[str] = []
        injected = 0
        for p in injectors:
            injected += p.stop()
            fault_errors += p.errors
        proxy_stats = cluster.proxy.stats.as_dict() if cluster.proxy else {}
        cluster.heal()
        if not wait_until(lambda: _reachable(dsn), 30):
            for w in consumers:
                w.stop()
    if fault_name in ("proxy-cuts", "ambiguous-commit", "mixed"):
        injected = (
            proxy_stats.get("random_cuts", 0)
            + proxy_stats.get("ambiguous_commits", 0)
            + proxy_stats.get("ambiguous_statements", 0)
            + injected
        )
    started = time.monotonic()
    if engine in ("timers", "dispatcher"):
        drained = wait_until(lambda: _timers_done(dsn, receiver), drain_timeout)
    elif engine == "serve":
        drained = wait_until(
            lambda: _queue_depth(dsn, LEASE_QUEUE) == 0 and _timers_done(dsn, receiver),
            drain_timeout,
        )
        time.sleep(0.5)
    elif engine == "worker":
        drained = wait_until(lambda: _queue_depth(dsn, LEASE_QUEUE) == 0, drain_timeout)
        time.sleep(0.5)
    elif engine == "app":
        drained = wait_until(
            lambda: _queue_depth(dsn, LEASE_QUEUE) == 0 and _app_caught_up(dsn), drain_timeout
        )
        time.sleep(0.5)
    elif engine == "queue":
        drained = wait_until(
            lambda: _queue_depth(dsn, TX_QUEUE) == 0 and _queue_depth(dsn, LEASE_QUEUE) == 0,
            drain_timeout,
        )
        time.sleep(0.5)  # acks in flight
    elif engine == "spark":
        drained = wait_until(lambda: _spark_caught_up(dsn), drain_timeout)
    else:
        drained = wait_until(lambda: _stream_caught_up(dsn), drain_timeout)
    drain_s = time.monotonic() - started
    for w in consumers:
        w.stop()
    crashed = {w.name: w.crashed for w in consumers + workloads if w.crashed}
    notes: dict[str, Any] = {
        "engine": engine,
        "drained": drained,
        "drain_s": round(drain_s, 1),
        "proxy": proxy_stats,
        "max_gap_s": _max_gaps(dsn, end_of_faults),
        "max_ack_gap_s": _max_ack_gaps(history),
    }
    reports: list[Report] = []
    if engine == "queue":
        reports.append(
            check(
                "queue-tx",
                history.ops(),
                _deliveries(dsn, "queue-tx"),
                dead=_dead(dsn, TX_QUEUE),
                exactly_once=True,
                idempotent_producer=True,  # client iids (queues.iid_window)
                fault=fault_name,
                faults_injected=injected,
            )
        )
        reports.append(
            check(
                "queue-lease",
                history.ops(),
                _deliveries(dsn, "queue-lease"),
                dead=_dead(dsn, LEASE_QUEUE),
                exactly_once=False,
                idempotent_producer=True,  # client iids (queues.iid_window)
                fault=fault_name,
                faults_injected=injected,
            )
        )
        lease = next(c for c in consumers if isinstance(c, LeaseQueueWorker))
        if lease.stats is not None:
            notes["worker"] = {
                "done": lease.stats.done,
                "reconnects": lease.stats.reconnects,
                "unfinished": lease.stats.unfinished,
                "failed": lease.stats.failed,
            }
    elif engine in ("timers", "dispatcher"):
        receiver.close()
        notes["max_gap_s"] = {engine: round(receiver.max_gap(end_of_faults_mono), 2)}
        calls = [Delivery(v, v) for v in receiver.calls]
        reports.append(
            check(
                engine,
                history.ops(),
                calls,
                dead=_timers_failed(dsn),
                exactly_once=False,
                fault=fault_name,
                faults_injected=injected,
            )
        )
        dispatcher = next((c for c in consumers if isinstance(c, DispatcherThread)), None)
        if isinstance(consumers[0], Processes):
            notes["worker"] = _process_notes(consumers[0])
        if dispatcher is not None and dispatcher.dispatcher is not None:
            st = dispatcher.dispatcher.stats
            notes["worker"] = {
                "delivered": st.delivered,
                "recorded": st.recorded,
                "expired": st.expired,
            }
    elif engine == "app":
        reports.append(
            check(
                "app-queue",
                history.ops(),
                _deliveries(dsn, "app-queue"),
                dead=_dead(dsn, LEASE_QUEUE),
                exactly_once=False,
                idempotent_producer=True,  # client iids (queues.iid_window)
                fault=fault_name,
                faults_injected=injected,
            )
        )
        ops = stream_ops = history.ops("app-stream")
        for workload, group, recorded in (
            ("app-stream", GROUP, stream_ops),
            ("app-slots", SLOTS_GROUP, [dataclasses.replace(o, workload="app-slots") for o in ops]),
        ):
            reports.append(
                check(
                    workload,
                    recorded,
                    _deliveries(dsn, workload),
                    dead=_stream_dead(dsn, group),
                    exactly_once=True,
                    ordered=True,
                    fault=fault_name,
                    faults_injected=injected,
                )
            )
        notes["worker"] = _process_notes(consumers[0])
    elif engine == "serve":
        reports.append(
            check(
                "serve",
                history.ops(),
                _deliveries(dsn, "serve"),
                dead=_dead(dsn, LEASE_QUEUE),
                exactly_once=False,
                idempotent_producer=True,  # client iids (queues.iid_window)
                fault=fault_name,
                faults_injected=injected,
            )
        )
        receiver.close()
        reports.append(
            check(
                "serve-timers",
                history.ops(),
                [Delivery(v, v) for v in receiver.calls],
                dead=_timers_failed(dsn),
                exactly_once=False,
                fault=fault_name,
                faults_injected=injected,
            )
        )
        server = next(c for c in consumers if isinstance(c, ServeProcess))
        http = next(c for c in consumers if isinstance(c, HttpConsumer))
        producers = [w for w in workloads if isinstance(w, HttpProducer)]
        notes["worker"] = {
            **_process_notes(server),
            "consumer_errors": http.errors,
            "lost_acks": http.lost_acks,
            "post_statuses": [p.statuses for p in producers],
            "create_statuses": [w.statuses for w in workloads if isinstance(w, HttpTimerCreator)],
        }
    elif engine == "spark":
        reports.append(
            check(
                "spark",
                history.ops(),
                _deliveries(dsn, "spark"),
                exactly_once=True,
                fault=fault_name,
                faults_injected=injected,
            )
        )
        query = next(c for c in consumers if isinstance(c, SparkQuery))
        notes["worker"] = {"restarts": query.restarts, "errors": query.errors[:3]}
    elif engine == "worker":
        reports.append(
            check(
                "queue-worker",
                history.ops(),
                _deliveries(dsn, "queue-worker"),
                dead=_dead(dsn, LEASE_QUEUE),
                exactly_once=False,
                idempotent_producer=True,  # client iids (queues.iid_window)
                fault=fault_name,
                faults_injected=injected,
            )
        )
        procs = next(c for c in consumers if isinstance(c, WorkerProcesses))
        notes["worker"] = _process_notes(procs)
    else:
        reports += _stream_reports(dsn, history, fault_name, injected)
        groups = [c for c in consumers if isinstance(c, StreamGroupWorker)]
        notes["worker"] = {
            "reconnects": groups[0].worker.stats.reconnects,
            "handled": groups[0].worker.stats.handled,
        }
        notes["slots"] = {g.name: g.worker.stats.handled for g in groups[1:]}
    if cluster.proxy is not None:
        cluster.proxy.stats.__init__()  # type: ignore[misc]
    cluster.drop_database(dsn)
    return Outcome(reports, crashed, fault_errors, notes)
