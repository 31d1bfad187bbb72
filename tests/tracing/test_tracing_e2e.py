"""One trace from a FastAPI request's post, through a worker's handler, to the timer callback the
handler schedules: real PostgreSQL, a real worker loop and dispatcher, a receiver on 127.0.0.1."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
import uvicorn
from fastapi import FastAPI
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from pgmbus import tracing
from pgmbus.handlers import QueueHandler
from pgmbus.http import ServiceConfig, create_app
from pgmbus.queues import AsyncBus, Message
from pgmbus.queues.loop import QueueLoop
from pgmbus.timers import store
from pgmbus.timers.dispatcher import Dispatcher, DispatcherConfig
from tests.timers.conftest import LOCAL, Env, ScriptedServer, wait_until
from tests.timers.test_timers_api import free_port
from tests.tracing.conftest import Recorder

FAST = DispatcherConfig(
    concurrency=4,
    timeout_s=5.0,
    poll_interval_s=0.05,
    bucket_lease_s=2.0,
    claim_slack_s=1.0,
    schedules=False,
    fast_retry_delay_s=0.01,
    record_interval_s=0.01,
)


def _parent(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def test_a_request_post_handler_and_callback_make_one_trace(
    db_dsn: str, recorder: Recorder
) -> None:
    env = Env(db_dsn)
    env.client = env.add_client("acme")
    receiver = ScriptedServer()
    handled = threading.Event()

    def schedule_callback(message: Message) -> None:  # a plain def: it runs in a worker thread
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            store.create(
                conn,
                env.client.id,
                "orders",
                message.iid,
                datetime.now(UTC),
                f"{receiver.url}/shipped",
                context={"order": message.data["order"]},
            )
        handled.set()

    async def main() -> None:
        async with AsyncBus(db_dsn, poll_interval=0.2) as bus:
            await bus.create_queue("orders")
            app = FastAPI()

            @app.post("/orders")
            async def order() -> dict[str, Any]:
                return {"iid": await bus.post("orders", {"order": 7})}

            FastAPIInstrumentor.instrument_app(app, tracer_provider=recorder.provider)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
                assert (await client.post("/orders")).status_code == 200
            FastAPIInstrumentor.uninstrument_app(app)

            stop = asyncio.Event()
            loop = QueueLoop(bus, QueueHandler(schedule_callback, "orders", concurrency=1))
            worker = asyncio.create_task(loop.run(stop, asyncio.Event()))
            dispatcher = asyncio.create_task(Dispatcher(db_dsn, FAST, LOCAL).run(stop))
            try:
                await asyncio.to_thread(handled.wait, 30)
                await asyncio.to_thread(receiver.wait_for, 1)
            finally:
                stop.set()
                await asyncio.gather(worker, dispatcher)

    try:
        asyncio.run(main())
    finally:
        receiver.close()

    server = next(s for s in recorder.spans() if s.kind is SpanKind.SERVER)
    publish = recorder.one("orders publish")
    process = recorder.one("orders process")
    call = recorder.one("callback 127.0.0.1")
    trace_ids = {s.context.trace_id for s in (server, publish, process, call)}
    assert trace_ids == {server.context.trace_id}, "one trace from the request to the callback"

    assert publish.kind is SpanKind.PRODUCER and _parent(publish) == server.context.span_id
    assert publish.attributes is not None and process.attributes is not None
    iid = publish.attributes["messaging.message.id"]
    assert publish.attributes["messaging.system"] == "pgmbus"
    assert publish.attributes["messaging.destination.name"] == "orders"
    assert publish.attributes["messaging.operation.type"] == "send"

    assert process.kind is SpanKind.CONSUMER and _parent(process) == publish.context.span_id
    assert [link.context.span_id for link in process.links] == [publish.context.span_id]
    assert process.attributes["messaging.message.id"] == iid
    assert process.attributes["messaging.operation.type"] == "process"
    assert process.attributes["messaging.consumer.group.name"] == "default"

    assert call.kind is SpanKind.CLIENT and _parent(call) == process.context.span_id
    assert call.attributes is not None
    assert call.attributes["http.response.status_code"] == 200
    assert call.attributes["http.request.method"] == "POST"
    assert call.status.status_code is StatusCode.UNSET

    # the receiver's request carries the callback's span as its parent, in W3C form
    (request,) = receiver.received
    version, trace_id, parent_id, _flags = request.headers["traceparent"].split("-")
    assert version == "00"
    assert int(trace_id, 16) == server.context.trace_id
    assert int(parent_id, 16) == call.context.span_id
    # the trace context kept with the callback travels as the header, not in the body
    assert request.json["context"]["order"] == 7
    assert tracing.CALLBACK_KEY not in request.json["context"]


def test_callbacks_created_over_http_keep_each_their_requests_trace(
    db_dsn: str, recorder: Recorder
) -> None:
    """``POST /v1/callbacks`` of an instrumented ``pgmbus serve``: two requests of two traces
    whose callbacks share one batch (committed in a task the first one started) keep each the
    context of its own request."""
    env = Env(db_dsn)
    env.client = env.add_client("acme")
    config = ServiceConfig(dsn=db_dsn, run_dispatcher=False, batch_max_wait_s=0.5)
    app = create_app(config)
    FastAPIInstrumentor.instrument_app(app, tracer_provider=recorder.provider)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    traces = [f"{n:032x}" for n in (0xA1, 0xB2)]
    created: dict[str, httpx.Response] = {}

    def create(trace_id: str) -> None:
        headers = {
            "authorization": f"Bearer {env.client.api_key}",
            "traceparent": f"00-{trace_id}-b7ad6b7169203331-01",
        }
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as client:
            created[trace_id] = client.post(
                "/v1/callbacks",
                json={
                    "group_key": "g",
                    "event_key": trace_id,
                    "run_at": datetime.now(UTC).isoformat(),
                    "url": "https://example.com/hook",
                    "context": {"n": 1},
                },
            )

    try:
        wait_until(lambda: server.started, timeout=10)
        senders = [threading.Thread(target=create, args=(t,)) for t in traces]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join(30)
    finally:
        server.should_exit = True
        thread.join(10)
        FastAPIInstrumentor.uninstrument_app(app)
    with psycopg.connect(db_dsn) as conn:
        row = conn.execute("SELECT count(DISTINCT created_at) FROM mbus.timer_callbacks").fetchone()
    assert row == (1,), "both in one batch (one statement, one creation time)"
    for trace_id in traces:
        assert created[trace_id].status_code == 201, created[trace_id].text
        context = created[trace_id].json()["context"]
        assert context["n"] == 1
        carried = context[tracing.CALLBACK_KEY]["traceparent"]
        assert carried.split("-")[1] == trace_id, "the context of its own request"
