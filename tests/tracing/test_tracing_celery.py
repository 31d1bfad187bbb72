"""Celery on pgmbus:// propagates with opentelemetry-instrumentation-celery, which puts the
context in the task message's headers: the transport must hand them back unchanged."""

from __future__ import annotations

from kombu.connection import Connection

from pgmbus.contrib.kombu_transport import url_from_dsn
from tests.tracing.conftest import Recorder

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_kombu_message_headers_cross_the_transport_unchanged(
    db_dsn: str, recorder: Recorder
) -> None:
    headers = {"traceparent": TRACEPARENT, "tracestate": "vendor=1", "task": "app.add"}
    tracer = recorder.provider.get_tracer("test")
    with Connection(url_from_dsn(db_dsn)) as conn:
        channel = conn.channel()
        channel.queue_declare("celery")
        with tracer.start_as_current_span("apply_async"):  # pgmbus's own post is traced too
            channel.basic_publish(channel.prepare_message("{}", headers=headers), "", "celery")
        got = channel.basic_get("celery")
        assert got is not None
        got.ack()
    assert got.headers == headers, "Celery's context, as the instrumentation put it"
    # pgmbus's post of the Kombu message is its own PRODUCER span in the caller's trace
    assert recorder.one("celery publish").parent is not None
