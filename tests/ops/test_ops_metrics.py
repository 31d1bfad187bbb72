"""/metrics scraped from a live server (and from `pgmbus metrics --listen`), checked against SQL."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.ops import state
from tests.ops.conftest import ADMIN_SCOPES, Service, free_port, start
from tests.processes import reap, stop, wait_until

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str) -> Samples:
    r = httpx.get(url, timeout=15)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def get(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


@pytest.fixture
def known(ops_dsn: str) -> Iterator[tuple[Service, dict[str, object]]]:
    made = state.build(ops_dsn)
    base, stop = start(ops_dsn, late_after_s=60)
    svc = Service(ops_dsn, base)
    svc.add_key("admin", ADMIN_SCOPES)
    try:
        yield svc, made
    finally:
        stop()


def test_selector_errors_are_exported(known: tuple[Service, dict[str, object]]) -> None:
    """A selector that raises on a message counts against its consumer."""
    svc, _ = known
    svc.sql("SELECT mbus.create_queue('picky', 1)")
    svc.sql("SELECT mbus.create_consumer('picky', 'strict', $$(t.data->>'n')::int > 0$$)")
    svc.sql("""SELECT mbus.post_picky('{"n": "not a number"}')""")
    svc.sql("""SELECT mbus.post_picky('{"n": 5}')""")
    m = scrape(svc.base + "/metrics")
    assert get(m, "pgmbus_queue_selector_errors_total", queue="picky", consumer="strict") == 1
    assert get(m, "pgmbus_queue_selector_errors_total", queue="picky", consumer="default") == 0
    assert get(m, "pgmbus_queue_consumer_dead_messages", queue="picky", consumer="strict") == 1


def test_metrics_equal_sql(known: tuple[Service, dict[str, object]]) -> None:
    svc, _ = known
    m = scrape(svc.base + "/metrics")
    assert get(m, "pgmbus_up") == 1
    # queues: every consumer's figures are mbus.queue_stats'
    rows = svc.sql(
        "SELECT qname, cname, depth, ready, delayed, leased, expired, dmq FROM mbus.queue_stats()"
    )
    assert len(rows) >= 9  # orders x2, mail, trip_* x3 and the saga queues
    for q, c, depth, ready, delayed, leased, expired, dmq in rows:
        lab = {"queue": q, "consumer": c}
        assert get(m, "pgmbus_queue_depth", **lab) == depth
        assert get(m, "pgmbus_queue_ready", **lab) == ready
        assert get(m, "pgmbus_queue_delayed", **lab) == delayed
        assert get(m, "pgmbus_queue_leased", **lab) == leased
        assert get(m, "pgmbus_queue_expired", **lab) == expired
        assert get(m, "pgmbus_queue_consumer_dead_messages", **lab) == dmq
    # the numbers the state was built to have
    lab = {"queue": "orders", "consumer": "default"}
    assert (
        get(m, "pgmbus_queue_depth", **lab),
        get(m, "pgmbus_queue_ready", **lab),
        get(m, "pgmbus_queue_delayed", **lab),
        get(m, "pgmbus_queue_leased", **lab),
    ) == (5, 3, 1, 1)  # 6 posted, 2 leased of which 1 buried; 1 delayed
    assert get(m, "pgmbus_queue_depth", queue="orders", consumer="audit") == 6
    assert get(m, "pgmbus_queue_oldest_ready_age_seconds", **lab) > 0
    assert get(m, "pgmbus_queue_dead_messages", queue="orders") == 1
    assert get(m, "pgmbus_queue_dead_messages", queue="mail") == 1
    assert get(m, "pgmbus_queue_dead_messages", queue="trip_rooms") == 0
    # streams: mbus.group_status per group and slot
    for group, slot, pending, retries, dead in svc.sql(
        "SELECT group_name, slot, pending_events, retries, dead_letters FROM mbus.group_status()"
    ):
        assert get(m, "pgmbus_stream_group_pending_events", group=group, slot=str(slot)) == pending
        assert get(m, "pgmbus_stream_group_retries", group=group) == retries
        assert get(m, "pgmbus_stream_group_dead_messages", group=group) == dead
    assert get(m, "pgmbus_stream_group_pending_events", group="billing", slot="0") == 6
    assert get(m, "pgmbus_stream_group_lag_seconds", group="billing", slot="0") > 0
    assert get(m, "pgmbus_stream_group_retries", group="billing") == 1
    assert get(m, "pgmbus_stream_group_dead_messages", group="billing") == 1
    search = [
        get(m, "pgmbus_stream_group_pending_events", group="search", slot=s) for s in ("0", "1")
    ]
    assert sum(search) == 6
    assert get(m, "pgmbus_stream_group_expired", group="billing") == 0
    for kind, value in svc.sql("SELECT name, value FROM mbus.stream_counters"):
        assert get(m, "pgmbus_streams_events_total", kind=kind) == value
    open_parts = svc.value("SELECT count(*) FROM mbus.event_partitions WHERE closed_at IS NULL")
    assert get(m, "pgmbus_stream_partitions", state="open") == open_parts > 0
    # timers
    for status, n in svc.sql("SELECT status, count(*) FROM mbus.timer_callbacks GROUP BY 1"):
        assert get(m, "pgmbus_timer_callbacks", status=status) == n
    assert get(m, "pgmbus_timer_callbacks", status="pending") == 3
    assert get(m, "pgmbus_timer_callbacks", status="cancelled") == 0
    assert get(m, "pgmbus_timer_due") == 2
    assert get(m, "pgmbus_timer_late") == 1
    assert 590 < get(m, "pgmbus_timer_oldest_due_age_seconds") < 900
    # calls recorded before the service began are not counted: its call totals start at 0
    # (test_ops_metrics_rules.py counts calls made while it runs)
    for outcome in ("ok", "error", "reject", "refused"):
        assert get(m, "pgmbus_timer_calls_total", outcome=outcome) == 0
    assert get(m, "pgmbus_timer_lateness_seconds_count") == 0
    assert get(m, "pgmbus_timer_lateness_seconds_bucket", le="+Inf") == 0
    assert get(m, "pgmbus_timer_buckets") == svc.value("SELECT count(*) FROM mbus.timer_buckets")
    assert get(m, "pgmbus_timer_buckets_leased") == 0
    assert get(m, "pgmbus_timer_dispatchers") == 0
    assert get(m, "pgmbus_timer_schedules", state="active") == 1
    # sagas
    for saga_state, n in svc.sql("SELECT state, count(*) FROM mbus.saga GROUP BY 1"):
        assert get(m, "pgmbus_sagas", state=saga_state) == n
    assert get(m, "pgmbus_sagas", state="running") == 1
    assert get(m, "pgmbus_sagas", state="compensating") == 1
    assert get(m, "pgmbus_sagas", state="completed") == 0


def test_metrics_follow_changes_and_need_a_key_when_private(ops_dsn: str) -> None:
    base, stop = start(ops_dsn, metrics_public=False)
    svc = Service(ops_dsn, base)
    svc.add_key("admin", ADMIN_SCOPES)
    try:
        r = httpx.get(base + "/metrics")
        assert r.status_code == 401 and r.json()["error"] == "unauthorized"
        with svc.client() as c:
            c.post("/v1/queues", json={"queue": "q"})
            c.post("/v1/queues/q/messages/batch", json={"messages": [{"data": {}}] * 7})
            first = c.get("/metrics").text
            assert 'pgmbus_queue_ready{consumer="default",queue="q"} 7.0' in first
            c.post("/v1/queues/q/lease", json={"limit": 3})
            second = c.get("/metrics").text
            assert 'pgmbus_queue_ready{consumer="default",queue="q"} 4.0' in second
            assert 'pgmbus_queue_leased{consumer="default",queue="q"} 3.0' in second
    finally:
        stop()


def test_metrics_command_exports_alone(ops_dsn: str) -> None:
    state.build(ops_dsn)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pgmbus",
            "metrics",
            "--dsn",
            ops_dsn,
            "--listen",
            f"127.0.0.1:{port}",
            "--late-after",
            "60",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:

        def answering() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/metrics").status_code == 200
            except httpx.TransportError:
                return False

        # a Python start can take tens of seconds on a loaded machine: wait on the process
        # (failing at once if it exits), not on a fixed time
        wait_until(answering, proc=proc, what="pgmbus metrics answering")
        m = scrape(f"http://127.0.0.1:{port}/metrics")
        assert get(m, "pgmbus_up") == 1
        assert get(m, "pgmbus_queue_depth", queue="orders", consumer="audit") == 6
        assert get(m, "pgmbus_timer_late") == 1
        assert get(m, "pgmbus_sagas", state="compensating") == 1
        done = stop(proc)
    finally:
        reap(proc)
    assert done.returncode == 0, done.stderr
    assert f"127.0.0.1:{port}/metrics" in done.stdout.decode()


def test_metrics_answer_when_the_database_is_gone(ops_dsn: str) -> None:
    base, stop = start(ops_dsn)
    try:
        assert "pgmbus_up 1.0" in httpx.get(base + "/metrics").text
        Service(ops_dsn, base).sql("DROP FUNCTION mbus.queue_stats(text, timestamptz) CASCADE")
        text = httpx.get(base + "/metrics").text
        assert "pgmbus_up 0.0" in text and "pgmbus_queue_depth" not in text
    finally:
        stop()
