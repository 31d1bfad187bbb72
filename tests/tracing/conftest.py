"""Tracing fixtures: the SDK's in-memory exporter as the global tracer provider, for one test.

The API lets a process set its global provider once; the fixture puts the previous one back so
that the other tests of the process run untraced, as they were written to.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once


class Recorder:
    """The spans finished while the test's provider was set."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, (name, [s.name for s in self.spans()])
        return found[0]


def _install(provider: trace.TracerProvider | None) -> None:
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    if provider is not None:
        trace.set_tracer_provider(provider)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """Spans recorded by a real SDK provider, set as the global one for the test."""
    before = trace._TRACER_PROVIDER
    recorder = Recorder()
    _install(recorder.provider)
    try:
        yield recorder
    finally:
        _install(before)
        recorder.provider.shutdown()


@pytest.fixture
def untraced() -> Iterator[None]:
    """No global provider for the test (tracing off), whatever an earlier test set."""
    before = trace._TRACER_PROVIDER
    _install(None)
    try:
        yield
    finally:
        _install(before)
