"""Trace context from untrusted headers: a malformed or foreign one never crashes a worker, never
loses its message and never joins a trace it does not name; tracing off costs nothing."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import SpanKind

from pgmbus import tracing
from pgmbus.errors import InvalidArgument
from pgmbus.handlers import QueueHandler
from pgmbus.queues import AsyncBus, Message
from pgmbus.queues.loop import QueueLoop
from pgmbus.timers import store
from pgmbus.timers.dispatcher import Dispatcher
from tests.timers.conftest import LOCAL, Env, ScriptedServer
from tests.tracing import conftest as tracing_fixtures
from tests.tracing.conftest import Recorder
from tests.tracing.test_tracing_e2e import FAST

ROOT = Path(__file__).resolve().parents[2]
recorder = tracing_fixtures.recorder  # the fixtures of tests/tracing, here too
untraced = tracing_fixtures.untraced
MALFORMED: list[Any] = [
    "garbage",
    "00-00000000000000000000000000000000-0000000000000000-01",  # all-zero ids: invalid
    "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  # version ff is forbidden
    12345,
    {"nested": "object"},
    ["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
]


def _handle_all(dsn: str, posted: Callable[[AsyncBus], Any], count: int) -> list[Message]:
    """Post with ``posted(bus)`` and run a worker until it has handled ``count`` messages and
    the queue is empty (every message acked)."""
    seen: list[Message] = []

    async def main() -> None:
        async with AsyncBus(dsn, poll_interval=0.1) as bus:
            await bus.create_queue("jobs")
            await posted(bus)

            async def handler(message: Message) -> None:
                seen.append(message)

            stop = asyncio.Event()
            task = asyncio.create_task(
                QueueLoop(bus, QueueHandler(handler, "jobs")).run(stop, asyncio.Event())
            )
            try:
                async with asyncio.timeout(30):
                    while True:
                        if len(seen) >= count and not (await bus.stats("jobs"))[0].depth:
                            break
                        await asyncio.sleep(0.02)
            finally:
                stop.set()
                await task

    asyncio.run(main())
    return seen


def test_a_malformed_traceparent_is_ignored_and_starts_a_new_trace(
    db_dsn: str, recorder: Recorder
) -> None:
    async def post(bus: AsyncBus) -> None:
        for value in MALFORMED:
            await bus.post("jobs", {"v": repr(value)}, headers={"traceparent": value})

    seen = _handle_all(db_dsn, post, len(MALFORMED))
    assert len(seen) == len(MALFORMED), "every message handled once, none lost"
    # the caller's header is theirs: kept as posted, not replaced by the post's context
    assert sorted(repr(m.headers["traceparent"]) for m in seen) == sorted(map(repr, MALFORMED))
    processes = recorder.named("jobs process")
    assert len(processes) == len(MALFORMED)
    publishes = {s.context.trace_id for s in recorder.named("jobs publish")}
    for span in processes:
        assert span.kind is SpanKind.CONSUMER
        assert span.parent is None and not span.links, "a new trace, linked to nothing"
        assert span.context.trace_id not in publishes


def test_a_message_posted_without_tracing_runs_untraced(db_dsn: str, recorder: Recorder) -> None:

    async def post_untraced(bus: AsyncBus) -> None:
        from opentelemetry import trace

        provider = trace._TRACER_PROVIDER
        trace._TRACER_PROVIDER = None  # the producer's process has no provider
        try:
            await bus.post("jobs", {"n": 1}, headers={"x": 1})
            await bus.post_batch("jobs", [{"n": 2}, {"n": 3}])
        finally:
            trace._TRACER_PROVIDER = provider

    seen = _handle_all(db_dsn, post_untraced, 3)
    assert len(seen) == 3
    assert all("traceparent" not in m.headers for m in seen)
    assert recorder.spans() == [], "no span for a message that carries no context"


def test_headers_of_the_wrong_type_are_refused_by_name_with_tracing_on(
    db_dsn: str, recorder: Recorder
) -> None:
    async def main() -> None:
        async with AsyncBus(db_dsn) as bus:
            await bus.create_queue("jobs")
            with pytest.raises(InvalidArgument, match="headers"):
                await bus.post("jobs", {"n": 1}, headers=["not", "a", "mapping"])  # type: ignore[arg-type]
            with pytest.raises(InvalidArgument, match="headers"):
                await bus.post_batch("jobs", [{"n": 1}], headers="nope")  # type: ignore[arg-type]
            assert (await bus.stats("jobs"))[0].depth == 0, "nothing posted"

    asyncio.run(main())


def test_a_callback_with_a_malformed_carried_context_is_still_called(
    db_dsn: str, recorder: Recorder
) -> None:
    env = Env(db_dsn)
    env.client = env.add_client("acme")
    receiver = ScriptedServer()
    contexts: list[Any] = [
        "not a mapping",
        {"traceparent": 7},
        {"traceparent": "00-zz-yy-01"},
    ]
    try:
        import psycopg

        with psycopg.connect(db_dsn, autocommit=True) as conn:
            for i, carried in enumerate(contexts):
                store.create(
                    conn,
                    env.client.id,
                    "g",
                    f"e{i}",
                    datetime.now(UTC),
                    f"{receiver.url}/cb",
                    context={tracing.CALLBACK_KEY: carried},
                )

        async def main() -> None:
            stop = asyncio.Event()
            task = asyncio.create_task(Dispatcher(db_dsn, FAST, LOCAL).run(stop))
            try:
                await asyncio.to_thread(receiver.wait_for, len(contexts))
            finally:
                stop.set()
                await task

        asyncio.run(main())
    finally:
        receiver.close()
    assert len(receiver.received) == len(contexts), "each called once, none dropped"
    calls = recorder.named("callback 127.0.0.1")
    assert len(calls) == 2, "the mapping ones are traced, each in a new trace"
    assert all(span.parent is None for span in calls)
    traced = [r for r in receiver.received if "traceparent" in r.headers]
    assert len(traced) == 2


BLOCKED = """
import importlib.abc, sys
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
from pgmbus import tracing
from pgmbus.handlers import QueueHandler
assert tracing.trace is None and not tracing.enabled()
spec = QueueHandler(print, "jobs")
assert tracing.traced_handler(spec) is spec
assert tracing.traced_event_handler(print, "g") is print
headers = {"a": 1}
with tracing.sending("jobs", "post") as span:
    assert span is None and tracing.inject(span, headers) is headers
item = {"context": {}}
assert tracing.with_trace(item) is item
assert tracing.request_headers({tracing.CALLBACK_KEY: {}}) == []
print("untraced ok")
"""


def test_without_the_api_installed_tracing_is_a_no_op() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "untraced ok" in done.stdout


def test_without_a_provider_a_post_s_tracing_costs_next_to_nothing(untraced: None) -> None:
    headers = {"a": 1}
    item = {"context": {"k": 1}}
    with tracing.sending("jobs", "post") as span:
        assert span is None
        assert tracing.inject(span, headers) is headers, "no copy of the headers"
        assert tracing.with_trace(item) is item
    rounds = 20_000
    started = time.perf_counter()
    for _ in range(rounds):
        with tracing.sending("jobs", "post") as span:
            tracing.inject(span, headers)
            tracing.sent(span, "jobs.1")
    per_post = (time.perf_counter() - started) / rounds
    # a post is a round trip to PostgreSQL (~100 us and more); the hooks cost about 1 us
    assert per_post < 20e-6, f"{per_post * 1e6:.2f} us per post"
