"""Trace context through each engine: batches, the blocking Bus, a failing handler, stream events,
and a route to another database (real PostgreSQL, real worker loops, the SDK's exporter)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import psycopg
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from pgmbus import streams
from pgmbus.exchange import Bridge
from pgmbus.handlers import QueueHandler, RetryPolicy
from pgmbus.queues import AsyncBus, Bus, Message
from pgmbus.queues.loop import QueueLoop
from tests.tracing.conftest import Recorder


async def _work(bus: AsyncBus, spec: QueueHandler, done: Callable[[], bool]) -> None:
    """Run a worker loop on ``spec`` until ``done()``."""
    stop = asyncio.Event()
    task = asyncio.create_task(QueueLoop(bus, spec).run(stop, asyncio.Event()))
    try:
        async with asyncio.timeout(30):
            while True:
                if done():
                    break
                await asyncio.sleep(0.02)
    finally:
        stop.set()
        await task


def test_a_batch_is_one_publish_span_and_each_message_its_process_span(
    db_dsn: str, recorder: Recorder
) -> None:
    seen: list[Message] = []

    async def main() -> list[str]:
        async with AsyncBus(db_dsn, poll_interval=0.2) as bus:
            await bus.create_queue("jobs")
            iids = await bus.post_batch("jobs", [{"n": 1}, {"n": 2}], headers=[{"a": 1}, {}])

            async def handler(message: Message) -> None:
                seen.append(message)

            await _work(bus, QueueHandler(handler, "jobs"), lambda: len(seen) == 2)
            return iids

    iids = asyncio.run(main())
    publish = recorder.one("jobs publish")
    assert publish.kind is SpanKind.PRODUCER and publish.attributes is not None
    assert publish.attributes["messaging.batch.message_count"] == 2
    assert publish.attributes["messaging.operation.type"] == "publish"
    processes = recorder.named("jobs process")
    assert sorted(
        str(s.attributes and s.attributes["messaging.message.id"]) for s in processes
    ) == (sorted(iids))
    for span in processes:
        assert span.parent is not None and span.parent.span_id == publish.context.span_id
    # the caller's own headers are kept beside the context
    assert sorted(m.data["n"] for m in seen) == [1, 2]
    assert next(m for m in seen if m.data["n"] == 1).headers["a"] == 1
    assert all(m.headers["traceparent"].startswith("00-") for m in seen)


def test_the_blocking_bus_injects_and_a_caller_set_context_is_kept(
    db_dsn: str, recorder: Recorder
) -> None:
    caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with Bus(db_dsn) as bus:
        bus.create_queue("jobs")
        tracer = recorder.provider.get_tracer("test")
        with tracer.start_as_current_span("request") as request:
            bus.post("jobs", {"n": 1})
            bus.post("jobs", {"n": 2}, headers={"traceparent": caller})
        got = {m.data["n"]: m for m in bus.consume("jobs", limit=10)}
    publishes = recorder.named("jobs publish")
    assert len(publishes) == 2
    assert all(s.context.trace_id == request.get_span_context().trace_id for s in publishes)
    first = publishes[0].context
    assert (
        got[1].headers["traceparent"].startswith(f"00-{first.trace_id:032x}-{first.span_id:016x}-")
    )
    assert got[2].headers["traceparent"] == caller, "the caller's context is not replaced"
    assert "tracestate" not in got[2].headers and "baggage" not in got[2].headers


def test_a_failing_handler_marks_its_span_and_the_message_is_retried(
    db_dsn: str, recorder: Recorder
) -> None:
    calls: list[int] = []

    async def main() -> None:
        async with AsyncBus(db_dsn, poll_interval=0.1) as bus:
            await bus.create_queue("jobs")
            await bus.post("jobs", {"n": 1})

            def handler(message: Message) -> None:  # in a thread: the span is there too
                calls.append(message.attempts)
                if len(calls) == 1:
                    raise ValueError("first attempt fails")

            retry = RetryPolicy(max_attempts=3, backoff=0.01, jitter=0)
            spec = QueueHandler(handler, "jobs", retry=retry)
            await _work(bus, spec, lambda: len(calls) == 2)
            async with asyncio.timeout(10):
                while True:  # the retry's ack is in
                    if not (await bus.stats("jobs"))[0].depth:
                        break
                    await asyncio.sleep(0.02)

    asyncio.run(main())
    failed, ok = recorder.named("jobs process")
    assert failed.status.status_code is StatusCode.ERROR
    assert [e.name for e in failed.events] == ["exception"]
    assert failed.events[0].attributes is not None
    assert failed.events[0].attributes["exception.type"] == "ValueError"
    assert ok.status.status_code is StatusCode.UNSET
    assert failed.parent == ok.parent, "both attempts are children of the one post"


def test_a_stream_event_carries_the_context_to_its_group_handler(
    db_dsn: str, recorder: Recorder
) -> None:
    handled: list[tuple[Any, int]] = []
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        streams.create_group(conn, "billing")
        streams.publish(conn, "invoices", {"n": 1}, headers={"source": "test"})

    def handler(_conn: Any, event: Any) -> None:
        handled.append((event.headers, trace.get_current_span().get_span_context().span_id))

    streams.StreamWorker(db_dsn, "billing", handler).drain()
    publish = recorder.one("invoices publish")
    process = recorder.one("invoices process")
    assert process.kind is SpanKind.CONSUMER and process.attributes is not None
    assert process.parent is not None and process.parent.span_id == publish.context.span_id
    assert process.attributes["messaging.consumer.group.name"] == "billing"
    [(headers, current)] = handled
    assert headers["source"] == "test" and "traceparent" in headers
    assert current == process.context.span_id, "the handler runs inside the consumer span"


def test_the_trace_context_survives_a_route_to_another_database(
    make_db: Callable[..., str], recorder: Recorder
) -> None:
    a_dsn, b_dsn = make_db(), make_db()
    with psycopg.connect(b_dsn, autocommit=True) as b:
        b.execute("SELECT mbus.create_queue('orders', 1)")
    with psycopg.connect(a_dsn, autocommit=True) as a:
        a.execute("SELECT mbus.create_queue('orders', 1)")
        a.execute("SELECT mbus.create_link('peer', %s)", (b_dsn,))
        a.execute("SELECT mbus.create_route('to_peer', 'peer', 'orders', 'orders')")
    with Bus(a_dsn) as bus:
        bus.post("orders", {"n": 1})
    mover = Bridge(a_dsn)
    try:
        mover.drain()
    finally:
        mover.close()
    seen: list[Message] = []

    async def main() -> None:
        async with AsyncBus(b_dsn, poll_interval=0.2) as bus:

            async def handler(message: Message) -> None:
                seen.append(message)

            await _work(bus, QueueHandler(handler, "orders"), lambda: bool(seen))

    asyncio.run(main())
    publish = recorder.one("orders publish")
    process = recorder.one("orders process")
    [message] = seen
    assert len(message.headers["seenby"]) == 2, "it came over the route"
    ids = f"{publish.context.trace_id:032x}-{publish.context.span_id:016x}"
    assert message.headers["traceparent"].split("-")[1:3] == ids.split("-")
    assert process.parent is not None and process.parent.span_id == publish.context.span_id
    assert process.context.trace_id == publish.context.trace_id
