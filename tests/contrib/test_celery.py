"""Celery on pgmbus: real worker processes run real tasks through the Kombu transport."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from types import ModuleType
from typing import Any

import psycopg
import pytest

from pgmbus.contrib.kombu_transport import dsn_from_url, eta_of, queue_name, url_from_dsn
from pgmbus.queues import Bus
from tests.contrib.celery_helpers import Start, effects, wait_for


def test_queue_names_fold_into_the_naming_rule() -> None:
    assert queue_name("celery") == "celery"
    assert queue_name("Celery.pidbox").startswith("celery_pidbox_")
    assert queue_name("a.b") != queue_name("a-b")
    assert all(len(queue_name(n).encode()) <= 24 for n in ("x" * 60, "1st", "é"))


def test_urls_and_dsns_round_trip() -> None:
    url = url_from_dsn("host='/tmp/a b' port=5433 user=u password=p@ss dbname=d")
    dsn = dsn_from_url(url)
    assert dsn is not None
    again = psycopg.conninfo.conninfo_to_dict(dsn)
    assert again == {
        "host": "/tmp/a b",
        "port": "5433",
        "user": "u",
        "password": "p@ss",
        "dbname": "d",
    }
    assert dsn_from_url("pgmbus://") is None
    eta = eta_of({"headers": {"eta": "2030-01-01T00:00:00"}})
    assert eta is not None
    assert eta.tzinfo is not None
    assert eta_of({"headers": {"eta": None}}) is None


@pytest.fixture(scope="module")
def main_worker(start_worker: Start, tasks: ModuleType) -> subprocess.Popen[bytes]:
    return start_worker("main", "celery,high")


def test_delay_round_trip_with_a_result(tasks: ModuleType, main_worker: Any) -> None:
    assert tasks.add.delay(2, 3).get(timeout=30) == 5


def test_countdown_waits_in_postgresql_until_due(
    tasks: ModuleType, main_worker: Any, celery_env: dict[str, str]
) -> None:
    dsn = celery_env["PGMBUS_CELERY_DSN"]
    with psycopg.connect(dsn) as conn:
        [(sent,)] = conn.execute("SELECT clock_timestamp()").fetchall()
    tasks.stamp.apply_async(("countdown",), countdown=2)
    with Bus(dsn) as bus:
        [stats] = bus.stats("celery")
        assert stats.delayed == 1  # the eta became delayed_until
    wait_for(lambda: bool(effects(dsn, "countdown")))
    [(_worker, _info, at)] = effects(dsn, "countdown")
    assert (at - sent).total_seconds() >= 2.0


def test_retries_run_again_until_success(
    tasks: ModuleType, main_worker: Any, celery_env: dict[str, str]
) -> None:
    assert tasks.flaky.delay("flaky", 2).get(timeout=30) == 3
    assert len(effects(celery_env["PGMBUS_CELERY_DSN"], "flaky")) == 3


def test_routes_put_tasks_in_their_queues(
    tasks: ModuleType, main_worker: Any, celery_env: dict[str, str]
) -> None:
    dsn = celery_env["PGMBUS_CELERY_DSN"]
    assert tasks.urgent.delay("urgent").get(timeout=30) == "urgent"  # task_routes -> high
    tasks.stamp.apply_async(("explicit",), queue="high")
    tasks.stamp.apply_async(("nobody",), queue="low")  # no worker reads low
    wait_for(lambda: bool(effects(dsn, "explicit")))
    [(_w, info, _at)] = effects(dsn, "explicit")
    assert info == {"queue": "high"}
    with Bus(dsn) as bus:
        depth = {s.qname: s.depth for s in bus.stats()}
    assert depth["low"] == 1 and depth["high"] == 0
    assert effects(dsn, "nobody") == []


def test_acks_late_task_of_a_killed_worker_is_done_once_by_another(
    tasks: ModuleType, start_worker: Start, celery_env: dict[str, str]
) -> None:
    dsn = celery_env["PGMBUS_CELERY_DSN"]
    first = start_worker("first", "slow", pool="solo", lease=2)
    tasks.slow_once.apply_async(("job",), queue="slow")
    wait_for(lambda: bool(effects(dsn, "job:start")), timeout=30)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    start_worker("second", "slow", pool="solo", lease=2)
    wait_for(lambda: bool(effects(dsn, "job:done")), timeout=30)
    starts = effects(dsn, "job:start")
    assert [w for w, _i, _a in starts] == ["first", "second"]
    time.sleep(0.5)
    assert [w for w, _i, _a in effects(dsn, "job:done")] == ["second"]
    with Bus(dsn) as bus:
        wait_for(lambda: bus.stats("slow")[0].depth == 0, timeout=10)  # acked


def test_the_worker_survives_its_connections_being_terminated(
    tasks: ModuleType, main_worker: Any, celery_env: dict[str, str]
) -> None:
    dsn = celery_env["PGMBUS_CELERY_DSN"]
    assert tasks.add.delay(1, 1).get(timeout=30) == 2
    with psycopg.connect(dsn, autocommit=True) as conn:
        killed = conn.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert killed is not None and killed[0] >= 1
    assert tasks.add.delay(2, 2).get(timeout=30) == 4
    assert main_worker.poll() is None


def test_reject_requeues_or_buries_in_the_dmq(
    tasks: ModuleType, main_worker: Any, celery_env: dict[str, str]
) -> None:
    dsn = celery_env["PGMBUS_CELERY_DSN"]
    assert tasks.requeue_once.delay("requeue").get(timeout=30) == "second time"
    assert len(effects(dsn, "requeue")) == 2
    tasks.refuse.delay("refuse")
    with Bus(dsn) as bus:
        wait_for(lambda: bool(bus.dmq("celery")))
        [dead] = bus.dmq("celery")
    assert dead.reason == "rejected by the consumer"
    assert len(effects(dsn, "refuse")) == 1


def test_kombu_channel_gives_unacked_messages_back_when_it_closes(db_dsn: str) -> None:
    from kombu.connection import Connection

    with Connection(url_from_dsn(db_dsn)) as first:
        channel = first.channel()
        channel.queue_declare("jobs.v1")
        for body in ("a", "b", "c"):
            channel.basic_publish(channel.prepare_message(body), "", "jobs.v1")
        assert channel.queue_declare("jobs.v1", passive=True).message_count == 3
        held = channel.basic_get("jobs.v1")
        assert held is not None and held.body == b"a" and not held.delivery_info["redelivered"]
    # closing the connection nacked the unacked message: it is there again at once, redelivered
    with Connection(url_from_dsn(db_dsn)) as second:
        channel = second.channel()
        got = [channel.basic_get("jobs.v1") for _ in range(3)]
        assert all(m is not None for m in got)
        assert sorted((m.body, m.delivery_info["redelivered"]) for m in got) == [
            (b"a", True),
            (b"b", False),
            (b"c", False),
        ]
        got[0].ack()
    with Connection(url_from_dsn(db_dsn)) as third:
        channel = third.channel()
        assert channel.queue_purge("jobs.v1") == 2  # the two unacked ones came back again
        assert channel.basic_get("jobs.v1") is None
    with Bus(db_dsn) as bus:
        assert [s.depth for s in bus.stats(queue_name("jobs.v1"))] == [0]


def test_an_idle_worker_wakes_on_the_post_not_the_poll(
    tasks: ModuleType, start_worker: Start, celery_env: dict[str, str]
) -> None:
    dsn = celery_env["PGMBUS_CELERY_DSN"]
    start_worker("idle", "fast", poll=30)  # only a NOTIFY can wake it within the test
    tasks.stamp.apply_async(("warmup",), queue="fast")
    wait_for(lambda: bool(effects(dsn, "warmup")), timeout=30)
    for i in range(3):
        time.sleep(0.5)  # idle again: waiting for posts
        with psycopg.connect(dsn) as conn:
            [(sent,)] = conn.execute("SELECT clock_timestamp()").fetchall()
        tasks.stamp.apply_async((f"fast{i}",), queue="fast")
        wait_for(lambda i=i: bool(effects(dsn, f"fast{i}")), timeout=10)  # type: ignore[misc]
        [(_w, _info, at)] = effects(dsn, f"fast{i}")
        assert (at - sent).total_seconds() < 3.0, at - sent


def test_priority_higher_first_like_rabbitmq(
    tasks: ModuleType, start_worker: Start, celery_env: dict[str, str]
) -> None:
    """``apply_async(priority=N)``: a worker takes higher priorities first, FIFO within one."""
    dsn = celery_env["PGMBUS_CELERY_DSN"]
    for i in range(4):
        tasks.ordered.apply_async(("prio", f"low{i}"), queue="prio")  # priority 0
    for i in range(3):
        tasks.ordered.apply_async(("prio", f"mid{i}"), queue="prio", priority=5)
    tasks.ordered.apply_async(("prio", "top"), queue="prio", priority=200)
    with Bus(dsn) as bus:
        assert bus.stats("prio")[0].depth == 8  # no worker reads prio yet
    start_worker("prio", "prio", pool="solo")  # one task at a time, prefetch 1
    wait_for(lambda: len(effects(dsn, "prio")) == 8, timeout=30)
    ran = [info["label"] for _w, info, _at in effects(dsn, "prio")]
    assert ran == ["top", "mid0", "mid1", "mid2", "low0", "low1", "low2", "low3"]


def test_a_consumer_claims_its_free_prefetch_at_once_and_gives_back_what_it_did_not_deliver(
    db_dsn: str,
) -> None:
    from kombu.connection import Connection

    with Connection(url_from_dsn(db_dsn)) as producer:
        channel = producer.channel()
        channel.queue_declare("claims")
        for i in range(12):
            channel.basic_publish(channel.prepare_message(str(i)), "", "claims")
    delivered: list[Any] = []
    with Bus(db_dsn) as bus, Connection(url_from_dsn(db_dsn)) as consumer:
        channel = consumer.channel()
        channel.basic_qos(0, 5, False)
        channel.basic_consume("claims", False, delivered.append, "claims-tag")
        consumer.drain_events(timeout=10)
        [stats] = bus.stats("claims")
        assert (len(delivered), stats.leased, stats.ready) == (1, 5, 7)  # one claim of 5 slots
        consumer.drain_events(timeout=10)
        assert [m.body for m in delivered] == [b"0", b"1"]  # the claim's next, in order
        assert bus.stats("claims")[0].leased == 5  # taken from the claim: no new query
        consumer.release()  # closing: delivered ones are restored, claimed ones given back
        [stats] = bus.stats("claims")
        assert (stats.leased, stats.ready) == (0, 12)  # at once, not after the lease
