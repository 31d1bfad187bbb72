"""The dispatcher against real HTTP servers on 127.0.0.1 with scripted behaviour."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from pgmbus.timers.dispatcher import Dispatcher, DispatcherConfig
from pgmbus.timers.netguard import NetworkGuard
from tests.processes import reap
from tests.timers.conftest import LOCAL, Env, Reply, ScriptedServer, run, wait_until

Server = Callable[..., ScriptedServer]


def fast_config(**kw: Any) -> DispatcherConfig:
    base: dict[str, Any] = {
        "concurrency": 16,
        "timeout_s": 2.0,
        "poll_interval_s": 0.05,
        "bucket_lease_s": 2.0,
        "claim_slack_s": 1.0,
        "schedules": False,
        "fast_retry_delay_s": 0.01,
        "record_interval_s": 0.01,
    }
    base.update(kw)
    return DispatcherConfig(**base)


def add(
    env: Env,
    key: str,
    url: str,
    *,
    run_at: datetime | None = None,
    retry: dict[str, Any] | None = None,
    stop_after: float | None = None,
    context: dict[str, Any] | None = None,
) -> int:
    from psycopg.types.json import Jsonb

    row = env.sql(
        "SELECT (callback->>'id')::bigint FROM mbus.timer_create(%s, 'g', %s, %s, %s, %s, %s, %s)",
        (
            env.client.id,
            key,
            run_at or datetime.now(UTC),
            url,
            Jsonb(context or {"key": key}),
            None if retry is None else Jsonb(retry),
            stop_after,
        ),
    )
    return int(row[0][0])


def status_of(env: Env, key: str) -> str:
    return str(
        env.sql("SELECT status FROM mbus.timer_callbacks WHERE event_key = %s", (key,))[0][0]
    )


def dispatch_until(
    env: Env,
    done: Callable[[], bool],
    config: DispatcherConfig | None = None,
    guard: NetworkGuard = LOCAL,
    count: int = 1,
    timeout: float = 30.0,
) -> list[Dispatcher]:
    """Run ``count`` dispatchers until ``done()`` (checked in a thread) is true."""

    async def main() -> list[Dispatcher]:
        stop = asyncio.Event()
        dispatchers = [
            Dispatcher(env.dsn, config or fast_config(name=f"d{i}"), guard) for i in range(count)
        ]
        if count > 1:
            for i, d in enumerate(dispatchers):
                d.name = d.config.name = f"{d.config.name}-{i}"
        tasks = [asyncio.create_task(d.run(stop)) for d in dispatchers]
        deadline = time.monotonic() + timeout
        try:
            while not await asyncio.to_thread(done):
                if time.monotonic() > deadline:
                    raise AssertionError("dispatch did not finish in time")
                for t in tasks:
                    if t.done():
                        t.result()
                await asyncio.sleep(0.05)
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        return dispatchers

    return run(main())


def all_finished(env: Env) -> Callable[[], bool]:
    return lambda: (
        env.sql("SELECT count(*) FROM mbus.timer_callbacks WHERE status = 'pending'")[0][0] == 0
    )


def test_500_three_times_then_200_is_notified_by_fast_retries(
    env: Env, http_server: Server
) -> None:
    server = http_server([Reply(500), Reply(500), Reply(500)])
    add(env, "e", server.url + "/hook", retry={"fast_retries": 3})
    dispatch_until(env, all_finished(env))
    assert status_of(env, "e") == "notified"
    got = server.received
    assert len(got) == 4
    assert len({r.headers["webhook-id"] for r in got}) == 1
    assert [r.headers["pgmbus-attempt"] for r in got] == ["1"] * 4  # one claim, fast retries
    assert [r.headers["pgmbus-call"] for r in got] == ["1", "2", "3", "4"]
    assert [(r.json["attempt"], r.json["call"]) for r in got] == [(1, 1), (1, 2), (1, 3), (1, 4)]
    calls = env.sql("SELECT call, outcome, status_code FROM mbus.timer_attempts ORDER BY call")
    assert calls == [(0, "error", 500), (1, "error", 500), (2, "error", 500), (3, "ok", 200)]
    # what people read numbers calls as the receiver saw them: the history API (and so the
    # dashboard, which shows its numbers) from 1, like pgmbus-call
    [(history,)] = env.sql("SELECT mbus.timer_history(%s, 'g', 'e')", (env.client.id,))
    assert [(a["attempt"], a["call"]) for a in history["attempts"]] == [
        (1, 1),
        (1, 2),
        (1, 3),
        (1, 4),
    ]


def test_500_three_times_then_200_by_rescheduled_retries(env: Env, http_server: Server) -> None:
    server = http_server([Reply(500), Reply(500), Reply(500)])
    add(env, "e", server.url, retry={"fast_retries": 0, "delay_s": 0.2})
    dispatch_until(env, all_finished(env))
    assert status_of(env, "e") == "notified"
    got = server.received
    assert [r.headers["pgmbus-attempt"] for r in got] == ["1", "2", "3", "4"]
    assert [r.headers["pgmbus-call"] for r in got] == ["1"] * 4
    assert len({r.headers["webhook-id"] for r in got}) == 1
    hist = env.sql("SELECT mbus.timer_history(%s, 'g', 'e')", (env.client.id,))[0][0]
    assert [c["action"] for c in hist["changes"]] == ["create", "retry", "retry", "retry", "status"]
    assert hist["callback"]["attempts"] == 4


def test_reject_header_marks_rejected_without_retry(env: Env, http_server: Server) -> None:
    server = http_server(default=Reply(500, {"X-Ya-CallMeBack-Notify-Reject": "1"}))
    add(env, "e", server.url, retry={"fast_retries": 3})
    dispatch_until(env, all_finished(env))
    assert status_of(env, "e") == "rejected"
    assert len(server.received) == 1


def test_slow_answer_beyond_the_timeout_is_retried(env: Env, http_server: Server) -> None:
    server = http_server([Reply(200, delay_s=1.5)])
    add(env, "e", server.url, retry={"fast_retries": 1})
    dispatch_until(env, all_finished(env), fast_config(timeout_s=0.4))
    assert status_of(env, "e") == "notified"
    calls = env.sql("SELECT call, outcome, error FROM mbus.timer_attempts ORDER BY call")
    assert calls[0][1] == "error" and "timeout" in calls[0][2]
    assert calls[1][:2] == (1, "ok")


def test_failed_after_stop_after_delay(env: Env, http_server: Server) -> None:
    server = http_server(default=Reply(503))
    add(env, "e", server.url, retry={"fast_retries": 0, "delay_s": 0.2}, stop_after=0.5)
    dispatch_until(env, all_finished(env))
    assert status_of(env, "e") == "failed"
    # how many retries fit before the deadline depends on the machine's speed
    (attempts,) = env.sql("SELECT attempts FROM mbus.timer_callbacks")[0]
    assert 1 <= len(server.received) == attempts <= 4
    (code, error) = env.sql("SELECT last_status_code, last_error FROM mbus.timer_callbacks")[0]
    assert code == 503 and error == "HTTP 503"


def test_request_is_signed_and_carries_context(env: Env, http_server: Server) -> None:
    server = http_server()
    add(env, "e", server.url + "/x", context={"order": 42})
    dispatch_until(env, all_finished(env))
    (req,) = server.received
    assert req.path == "/x"
    assert req.json["context"] == {"order": 42}
    assert req.json["event_key"] == "e" and req.json["group_key"] == "g"
    assert req.json["webhook_id"] == req.headers["webhook-id"]
    signed = f"{req.headers['webhook-id']}.{req.headers['webhook-timestamp']}.".encode() + req.body
    key = base64.b64decode(env.client.signing_secret.removeprefix("whsec_"))
    mac = hmac.new(key, signed, hashlib.sha256).digest()
    assert req.headers["webhook-signature"] == "v1," + base64.b64encode(mac).decode()
    assert req.headers["host"] == server.url.removeprefix("http://")


def test_private_targets_are_refused_unless_allow_listed(env: Env, http_server: Server) -> None:
    server = http_server()
    add(env, "e", server.url)
    dispatch_until(env, all_finished(env), guard=NetworkGuard())
    assert status_of(env, "e") == "failed"
    assert server.received == []
    error = env.sql("SELECT last_error FROM mbus.timer_callbacks")[0][0]
    assert "127.0.0.1" in error and "not public" in error


def test_redirects_are_followed_only_into_allowed_networks(env: Env, http_server: Server) -> None:
    server = http_server()
    server.by_path["/to-loopback"] = [Reply(307, {"location": "http://127.0.0.2:1/x"})]
    server.by_path["/to-self"] = [Reply(308, {"location": "/final"})]
    add(env, "bad", server.url + "/to-loopback")
    add(env, "good", server.url + "/to-self")
    dispatch_until(env, all_finished(env))
    assert status_of(env, "bad") == "failed"
    assert (
        "127.0.0.2"
        in env.sql("SELECT last_error FROM mbus.timer_callbacks WHERE event_key = 'bad'")[0][0]
    )
    assert status_of(env, "good") == "notified"
    assert sorted(r.path for r in server.received) == ["/final", "/to-loopback", "/to-self"]


def test_urls_that_cannot_be_encoded_and_bad_redirects_fail_once_recorded(
    env: Env, http_server: Server
) -> None:
    # the SQL API stores these; the dispatcher crashed on them: the callbacks stayed pending,
    # nothing was recorded and the redirecting receivers were called again at each claim expiry
    server = http_server()
    server.by_path["/redir"] = [Reply(302, {"location": "http://xn--a.example/"})]
    server.by_path["/badloc"] = [Reply(302, {"location": "http://[::1/"})]
    bad = {
        "idna": "http://xn--a.example/",
        "dots": "http://a..b/",
        "port": "http://127.0.0.1:99999/",
        "redir": server.url + "/redir",
        "badloc": server.url + "/badloc",
    }
    for key, url in bad.items():
        add(env, key, url)
    add(env, "ok1", server.url + "/ok1")
    add(env, "ok2", server.url + "/ok2")
    dispatch_until(env, all_finished(env), timeout=15)
    assert {k: status_of(env, k) for k in [*bad, "ok1", "ok2"]} == {
        **dict.fromkeys(bad, "failed"),
        "ok1": "notified",
        "ok2": "notified",
    }
    # each receiver called exactly once: a bad Location is a refused redirect, not retried
    assert sorted(r.path for r in server.received) == ["/badloc", "/ok1", "/ok2", "/redir"]
    rows = env.sql(
        "SELECT c.event_key, a.attempt, a.call, a.outcome, a.error, c.last_error "
        "FROM mbus.timer_attempts a JOIN mbus.timer_callbacks c ON c.id = a.callback_id"
        " WHERE c.event_key <> ALL (ARRAY['ok1', 'ok2']) ORDER BY c.event_key"
    )
    assert [r[:4] for r in rows] == [(k, 1, 0, "refused") for k in sorted(bad)]
    errors = {r[0]: r[4] for r in rows}
    assert all(r[4] == r[5] for r in rows)  # the callback shows the attempt's error
    assert errors["idna"].startswith("invalid host name 'xn--a.example'")
    assert errors["dots"].startswith("invalid host name 'a..b'")
    assert errors["port"] == "invalid port 99999"
    assert errors["redir"].startswith("invalid host name 'xn--a.example'")
    assert errors["badloc"].startswith("redirect to an invalid URL")


def _crash_rows(env: Env, key: str) -> tuple[int, list[tuple[Any, ...]]]:
    """The callback's attempts count and its attempt rows (attempt, call, outcome, error)."""
    (attempts,) = env.sql("SELECT attempts FROM mbus.timer_callbacks WHERE event_key = %s", (key,))[
        0
    ]
    rows = env.sql(
        "SELECT a.attempt, a.call, a.outcome, a.error FROM mbus.timer_attempts a "
        "JOIN mbus.timer_callbacks c ON c.id = a.callback_id "
        "WHERE c.event_key = %s ORDER BY 1, 2",
        (key,),
    )
    return int(attempts), rows


def test_a_call_that_raises_is_an_error_recorded_and_retried_by_its_policy(
    env: Env, http_server: Server
) -> None:
    # an exception no rule expects (here from a broken resolver) left the callback pending
    # for ever with nothing recorded; now it is an error call: fast retries, retries, failed
    async def broken(host: str, port: int) -> list[Any]:
        raise RuntimeError(f"resolver bug on {host}")

    server = http_server()
    add(env, "boom", "http://boom.test/", retry={"fast_retries": 1, "delay_s": 0.2}, stop_after=0.5)
    add(env, "ok", server.url + "/ok")
    guard = NetworkGuard(LOCAL.allow, resolver=broken)
    dispatch_until(env, all_finished(env), guard=guard, timeout=15)
    assert (status_of(env, "boom"), status_of(env, "ok")) == ("failed", "notified")
    assert [r.path for r in server.received] == ["/ok"]
    attempts, rows = _crash_rows(env, "boom")
    error = "internal error: RuntimeError: resolver bug on boom.test"
    assert 1 <= attempts <= 4  # how many retries fit in 0.5 s depends on the machine
    assert rows == [(a, c, "error", error) for a in range(1, attempts + 1) for c in (0, 1)]
    assert (
        env.sql("SELECT last_error FROM mbus.timer_callbacks WHERE event_key = 'boom'")[0][0]
        == error
    )


def test_a_delivery_that_raises_is_recorded_not_left_pending(
    env: Env, http_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the worker's last net, behind deliver's own: the claim used to expire unrecorded
    from pgmbus.timers import delivery, dispatcher

    real = delivery.deliver  # the function the dispatcher imported, replaced there below

    async def deliver(transport: Any, guard: Any, cb: Any, **kw: Any) -> Any:
        if cb.event_key == "boom":
            raise RuntimeError("delivery bug")
        return await real(transport, guard, cb, **kw)

    monkeypatch.setattr(dispatcher, "deliver", deliver)
    server = http_server()
    add(
        env, "boom", server.url + "/boom", retry={"fast_retries": 0, "delay_s": 0.2}, stop_after=0.5
    )
    add(env, "ok", server.url + "/ok")
    dispatch_until(env, all_finished(env), timeout=15)
    assert (status_of(env, "boom"), status_of(env, "ok")) == ("failed", "notified")
    attempts, rows = _crash_rows(env, "boom")
    assert 1 <= attempts <= 4
    error = "internal error: RuntimeError: delivery bug"
    assert rows == [(a, 0, "error", error) for a in range(1, attempts + 1)]


def test_concurrency_is_bounded(env: Env, http_server: Server) -> None:
    server = http_server(default=Reply(200, delay_s=0.2))
    for i in range(12):
        add(env, f"e{i}", server.url)
    dispatch_until(env, all_finished(env), fast_config(concurrency=3))
    assert len(server.received) == 12
    assert server.max_inflight <= 3


def test_two_dispatchers_never_call_the_same_attempt_twice(env: Env, http_server: Server) -> None:
    server = http_server()
    added = False

    def done() -> bool:
        nonlocal added
        if not added:  # once both dispatchers hold buckets, 300 callbacks fall due at once
            if env.sql("SELECT count(DISTINCT owner) FROM mbus.timer_buckets")[0][0] < 2:
                return False
            now = datetime.now(UTC)
            for i in range(300):
                add(env, f"e{i}", server.url, run_at=now + timedelta(milliseconds=i))
            added = True
        return bool(all_finished(env)())

    dispatchers = dispatch_until(env, done, fast_config(), count=2)
    calls = Counter((r.headers["webhook-id"], r.headers["pgmbus-attempt"]) for r in server.received)
    assert len(calls) == 300 and set(calls.values()) == {1}
    assert {a for _, a in calls} == {"1"}
    assert all(d.stats.delivered > 0 for d in dispatchers)  # both took part
    assert sum(d.stats.delivered for d in dispatchers) == 300


def test_late_committed_and_past_dated_callbacks_are_dispatched(
    env: Env, http_server: Server
) -> None:
    server = http_server()
    add(env, "first", server.url)
    released = threading.Event()

    def late_writer() -> None:
        with psycopg.connect(env.dsn) as conn:
            conn.execute(
                "SELECT mbus.timer_create(%s, 'g', 'late', now() - interval '1 hour', %s)",
                (env.client.id, server.url),
            )
            released.wait(10)
            conn.commit()

    writer = threading.Thread(target=late_writer)
    writer.start()

    def done() -> bool:
        if len(server.received) >= 1 and not released.is_set():
            time.sleep(0.3)  # several polls pass while the late transaction is open
            add(env, "past", server.url, run_at=datetime.now(UTC) - timedelta(days=1))
            released.set()
        return bool(all_finished(env)()) and released.is_set() and len(server.received) >= 3

    dispatch_until(env, done)
    writer.join()
    keys = [r.json["event_key"] for r in server.received]
    assert keys[0] == "first" and sorted(keys[1:]) == ["late", "past"]
    assert all(status_of(env, k) == "notified" for k in keys)


@pytest.mark.slow
def test_dispatcher_killed_after_the_call_redelivers_with_the_same_webhook_id(
    env: Env, http_server: Server
) -> None:
    proc: subprocess.Popen[bytes] | None = None

    def kill_dispatcher() -> None:
        assert proc is not None
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    server = http_server([Reply(200, action=kill_dispatcher)])
    add(env, "e", server.url, retry={"fast_retries": 0})
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pgmbus",
            "dispatcher",
            "--dsn",
            env.dsn,
            "--allow-network",
            "127.0.0.1/32",
            "--timeout",
            "1",
            "--claim-slack",
            "0.5",
            "--bucket-lease",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        server.wait_for(1, timeout=30)
        wait_until(lambda: proc is not None and proc.poll() is not None)
    finally:
        reap(proc)
    assert status_of(env, "e") == "pending"  # the call happened, its result was never recorded
    dispatch_until(env, all_finished(env), fast_config(bucket_lease_s=1.0))
    assert status_of(env, "e") == "notified"
    first, second = server.received
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert (first.headers["pgmbus-attempt"], second.headers["pgmbus-attempt"]) == ("1", "2")


def test_dispatcher_reconnects_after_its_connections_are_killed(
    env: Env, http_server: Server
) -> None:
    server = http_server()
    add(env, "before", server.url)
    killed = False

    def done() -> bool:
        nonlocal killed
        if not killed and server.received:
            env.sql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            killed = True
            add(env, "after", server.url)
        return killed and bool(all_finished(env)())

    dispatch_until(env, done)
    assert sorted(r.json["event_key"] for r in server.received) == ["after", "before"]
    assert status_of(env, "after") == "notified"


def test_dispatcher_generates_schedules_and_runs_the_daily_cleanup(
    env: Env, http_server: Server
) -> None:
    server = http_server()
    env.sql(
        "SELECT mbus.timer_schedule_create(%s, 'tick', %s, p_interval_s => 1)",
        (env.client.id, server.url + "/tick"),
    )
    old = datetime.now(UTC) - timedelta(days=40)
    env.sql(
        "SELECT mbus.timer_create(%s, 'g', 'old', %s, %s, p_now => %s)",
        (env.client.id, old, server.url, old),
    )
    env.sql("SELECT mbus.timer_cancel(%s, 'g', 'old', %s)", (env.client.id, old))

    def done() -> bool:
        return len(server.received) >= 2

    dispatch_until(env, done, fast_config(schedules=True, schedule_interval_s=0.2))
    ticks = [r for r in server.received if r.path == "/tick"]
    assert len(ticks) >= 2 and len({r.headers["webhook-id"] for r in ticks}) == len(ticks)
    assert all(r.json["group_key"] == "tick" for r in ticks)
    assert env.sql("SELECT last_run_at IS NOT NULL FROM mbus.timer_jobs")[0][0]
    assert env.sql("SELECT count(*) FROM mbus.timer_callbacks WHERE event_key = 'old'")[0][0] == 0
