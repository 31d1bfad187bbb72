"""Declaring handlers, the retry policy, the one-shot drain and the health endpoint, in-process."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import psycopg
import pytest

import pgmbus
from pgmbus import streams
from pgmbus.handlers import HandlerTimeout, RetryPolicy
from pgmbus.queues import AsyncBus, Bus, Message
from pgmbus.workers import App, drain, load_target
from pgmbus.workers.health import parse_address, serve_health


def test_backoff_doubles_is_capped_and_jittered_within_bounds() -> None:
    fixed = RetryPolicy(backoff=2.0, backoff_max=10.0, jitter=0.0)
    assert [fixed.delay(n) for n in (1, 2, 3, 4, 9)] == [2.0, 4.0, 8.0, 10.0, 10.0]
    rng = random.Random(7)
    full = RetryPolicy(backoff=4.0, jitter=1.0)
    draws = [full.delay(1, rng) for _ in range(200)]
    assert min(draws) >= 0.0 and max(draws) <= 4.0 and max(draws) - min(draws) > 2.0
    half = RetryPolicy(backoff=4.0, jitter=0.5)
    assert all(2.0 <= half.delay(1, rng) <= 4.0 for _ in range(200))
    custom = RetryPolicy(backoff=lambda n: 3.0 * n, jitter=0.0, backoff_max=7.0)
    assert [custom.delay(n) for n in (1, 2, 3)] == [3.0, 6.0, 7.0]


def test_retry_on_and_no_retry_on() -> None:
    policy = RetryPolicy(retry_on=(OSError, TimeoutError), no_retry_on=(ConnectionRefusedError,))
    assert policy.retries(ConnectionResetError())  # an OSError
    assert policy.retries(HandlerTimeout("late"))  # a TimeoutError
    assert not policy.retries(ConnectionRefusedError())  # excluded, although an OSError
    assert not policy.retries(ValueError())  # not listed
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(jitter=1.5)


def test_bus_async_bus_and_app_declare_handlers() -> None:
    """The issue's spelling works on each; the function stays as it was."""
    for bus in (Bus("postgresql:///x"), AsyncBus("postgresql:///x"), pgmbus.App("dbname=x")):

        @bus.handler(
            "mail",
            consumer="default",
            max_attempts=5,
            backoff=2,
            jitter=0.1,
            timeout=30,
            concurrency=4,
        )
        async def send(message: Message) -> str:
            return message.iid

        @bus.stream_handler("audit", slots=range(2))
        def audit(conn: Any, event: Any) -> None:
            pass

        assert asyncio.iscoroutinefunction(send) and send.__name__ == "send"
        (spec,) = bus.queue_handlers
        assert (spec.queue, spec.consumer, spec.timeout, spec.concurrency) == (
            "mail",
            "default",
            30,
            4,
        )
        assert spec.retry.max_attempts == 5 and spec.retry.backoff == 2 and spec.is_async
        assert spec.name.endswith("test_bus_async_bus_and_app_declare_handlers.<locals>.send")
        (stream,) = bus.stream_handlers
        assert stream.group == "audit" and stream.slots == (0, 1)
    app = App()

    @app.stream_handler("audit")
    async def handle(conn: Any, event: Any) -> None:  # an async stream handler
        pass

    (stream_spec,) = app.stream_handlers
    assert stream_spec.is_async and stream_spec.fn is handle

    with pytest.raises(ValueError, match="concurrency"):
        App().handler("mail", concurrency=0)


def test_load_target_and_empty_app() -> None:
    assert load_target("pgmbus.workers:App") is App
    with pytest.raises(ValueError, match="module:attribute"):
        load_target("pgmbus.workers")
    with pytest.raises(ValueError, match="no handlers"):
        drain(App("dbname=x"))
    with pytest.raises(TypeError, match="declares no handlers"):
        drain(object())  # type: ignore[arg-type]


def test_drain_runs_each_handler_until_nothing_is_due(db_dsn: str) -> None:
    """One-shot: sync and async queue handlers and a stream handler, retries with no delay
    until the dmq, then it returns with the counts."""
    app = App(db_dsn)
    seen: list[tuple[str, int]] = []

    @app.handler("mail", concurrency=2)
    async def mail(message: Message) -> None:
        seen.append(("mail", message.data["n"]))

    @app.handler("jobs", max_attempts=3, backoff=0, jitter=0)
    def jobs(message: Message) -> None:
        if message.data.get("fail"):
            raise RuntimeError("nope")
        seen.append(("jobs", message.data["n"]))

    @app.stream_handler("audit")
    def audit(conn: psycopg.Connection[Any], event: streams.Event) -> None:
        conn.execute("INSERT INTO audited VALUES (%s)", (event.id,))

    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE audited (event_id bigint PRIMARY KEY)")
        streams.create_group(conn, "audit", start="beginning")
        ids = streams.publish_batch(conn, "orders", [{} for _ in range(25)])
    with Bus(db_dsn) as bus:
        bus.create_queue("mail")
        bus.create_queue("jobs")
        bus.post_batch("mail", [{"n": i} for i in range(5)])
        bus.post_batch("jobs", [{"n": 0}, {"fail": True}, {"n": 1}])
        report = drain(app)
        (dead,) = bus.dmq("jobs")
        assert dead.reason == "RuntimeError: nope" and dead.attempts == 3
        assert {s.depth for s in bus.stats()} == {0}
    assert sorted(seen) == [("jobs", 0), ("jobs", 1)] + [("mail", i) for i in range(5)]
    by_fn = {name.rpartition(".")[2]: stats for name, stats in report.queues.items()}
    assert by_fn["jobs"].summary().startswith("2 done, 2 retried, 1 dead")
    assert by_fn["mail"].done == 5
    (audited,) = report.streams.values()
    assert audited.handled == 25
    with psycopg.connect(db_dsn) as conn:
        assert [r[0] for r in conn.execute("SELECT event_id FROM audited ORDER BY 1")] == ids


def test_health_endpoint_answers_200_or_503() -> None:
    assert parse_address("10.1.2.3:8080") == ("10.1.2.3", 8080)
    assert parse_address(":9") == ("127.0.0.1", 9)
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_address("localhost")
    loops = {"a": True, "b": True}

    async def scenario() -> list[tuple[int, dict[str, Any]]]:
        server = await serve_health("127.0.0.1", 0, lambda: dict(loops))
        port = server.sockets[0].getsockname()[1]
        got = []
        for state in (True, False):
            loops["b"] = state
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            raw = await reader.read()
            writer.close()
            head, _, body = raw.partition(b"\r\n\r\n")
            got.append((int(head.split()[1]), json.loads(body)))
        server.close()
        await server.wait_closed()
        return got

    (up, down) = asyncio.run(scenario())
    assert up == (200, {"status": "ok", "loops": {"a": True, "b": True}})
    assert down == (503, {"status": "unavailable", "loops": {"a": True, "b": False}})


def test_drain_runs_async_stream_handlers_in_the_batch_transaction(db_dsn: str) -> None:
    """An ``async def`` stream handler writes in the batch's transaction on an
    AsyncConnection: a failure undoes its writes and retries the event; one row per event."""
    app = App(db_dsn)
    calls: list[int] = []

    @app.stream_handler("audit")
    async def audit(conn: psycopg.AsyncConnection[Any], event: streams.Event) -> None:
        calls.append(event.id)
        await conn.execute("INSERT INTO audited VALUES (%s)", (event.id,))
        if event.payload.get("fail") and calls.count(event.id) == 1:
            raise RuntimeError("first attempt fails")

    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE audited (event_id bigint PRIMARY KEY)")
        streams.create_group(conn, "audit", start="beginning")
        conn.execute("SELECT mbus.configure_group('audit', retry_backoff => '0 s')")
        ids = streams.publish_batch(conn, "orders", [{"fail": i == 3} for i in range(10)])
    report = drain(app)
    (stats,) = report.streams.values()
    assert (stats.handled, stats.retried, stats.dead) == (10, 1, 0)
    assert calls.count(ids[3]) == 2
    with psycopg.connect(db_dsn) as conn:
        assert [r[0] for r in conn.execute("SELECT event_id FROM audited ORDER BY 1")] == ids
