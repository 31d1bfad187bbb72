"""OpenTelemetry tracing: the one module that imports ``opentelemetry`` (extra ``[otel]``).

Posts and publishes carry the current trace context in their headers (the global textmap
propagator's fields: W3C ``traceparent``, ``tracestate`` and ``baggage`` by default); workers
run each handler in a span whose parent is that context. Everything here is a no-op, one cheap
check, when the API is not installed or no tracer provider is set (docs/tracing.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from pgmbus import __version__

try:
    from opentelemetry import propagate, trace
    from opentelemetry.trace import (
        Link,
        NoOpTracerProvider,
        ProxyTracerProvider,
        Span,
        SpanKind,
        Status,
        StatusCode,
        Tracer,
    )
except ImportError:  # the extra is not installed: nothing is traced
    trace = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from pgmbus.handlers import QueueHandler

SYSTEM = "pgmbus"
CALLBACK_KEY = "pgmbus.trace"
"""The key of a timer callback's ``context`` that keeps the trace context it was created in."""

_NO_SPAN: contextlib.nullcontext[None] = contextlib.nullcontext()
_PROVIDER_FROM_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ  # the API loads it when asked
_OFF = () if trace is None else (ProxyTracerProvider, NoOpTracerProvider)
_last: tuple[Any, Tracer] | None = None  # the last provider seen and pgmbus's tracer of it

Spec = TypeVar("Spec", bound="QueueHandler")
Handler = TypeVar("Handler", bound=Callable[..., Any])


def _tracer() -> Tracer | None:
    """pgmbus's tracer, or None when tracing is off (no API, or no provider set)."""
    if trace is None:
        return None
    # The API's global read first: while none is set, get_tracer_provider() looks an
    # environment variable up at every call (about a microsecond per post, ten times the rest)
    if getattr(trace, "_TRACER_PROVIDER", True) is None and not _PROVIDER_FROM_ENV:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, _OFF):
        return None
    global _last
    if _last is None or _last[0] is not provider:
        # by identity, the provider held: an id() could be a collected provider's, reused
        _last = (provider, provider.get_tracer("pgmbus", __version__))
    return _last[1]


def enabled() -> bool:
    """True when spans are recorded and contexts injected (the API and a provider are set)."""
    return _tracer() is not None


def _carrier(headers: Mapping[str, Any] | None) -> dict[str, str]:
    """The propagator's fields of ``headers`` that are strings (anything else is ignored: a
    header of another type must not make the propagator raise)."""
    if not headers:
        return {}
    return {
        name: value
        for name in propagate.get_global_textmap().fields
        if isinstance(value := headers.get(name), str)
    }


def _injected() -> dict[str, str]:
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def _merged(headers: Mapping[str, Any] | None, context: dict[str, str]) -> Any:
    """``headers`` with the context's fields the caller did not set (a copy; ``headers`` that
    are not a mapping are returned as they are, for the caller's check to refuse)."""
    if headers is None:
        return dict(context) if context else None
    if not isinstance(headers, Mapping) or not context or any(k in headers for k in context):
        return headers  # a context the caller set is theirs to carry, whole
    return {**headers, **context}


# --- producers ------------------------------------------------------------------------------


def _messaging(destination: str, operation: str, kind_name: str) -> dict[str, Any]:
    return {
        "messaging.system": SYSTEM,
        "messaging.destination.name": destination,
        "messaging.operation.type": kind_name,
        "messaging.operation.name": operation,
    }


def sending(
    destination: str, operation: str, count: int | None = None
) -> contextlib.AbstractContextManager[Span | None]:
    """A PRODUCER span ``"<destination> publish"`` made current (None when tracing is off)."""
    tracer = _tracer()
    if tracer is None:
        return _NO_SPAN
    attributes = _messaging(destination, operation, "send" if count is None else "publish")
    if count is not None:
        attributes["messaging.batch.message_count"] = count
    return tracer.start_as_current_span(
        f"{destination} publish", kind=SpanKind.PRODUCER, attributes=attributes
    )


def inject(span: Span | None, headers: Mapping[str, Any] | None) -> Any:
    """``headers`` with the current trace context added (fields the caller set are kept)."""
    if span is None:
        return headers
    return _merged(headers, _injected())


def inject_many(span: Span | None, headers: Any, count: int) -> Any:
    """A batch's headers (one mapping per message, or None) with the current context added."""
    if span is None:
        return headers
    context = _injected()
    if headers is None:
        return [dict(context) for _ in range(count)] if context else None
    if not isinstance(headers, Sequence) or isinstance(headers, str | bytes | Mapping):
        return headers
    return [_merged(h, context) if isinstance(h, Mapping) else h for h in headers]


def sent(span: Span | None, ids: str | int | Sequence[str | int]) -> None:
    """Record the message id (or the batch's ids, when one) on the producer span."""
    if span is None:
        return
    if isinstance(ids, str | int):
        span.set_attribute("messaging.message.id", str(ids))
    elif len(ids) == 1:
        span.set_attribute("messaging.message.id", str(ids[0]))


# --- consumers ------------------------------------------------------------------------------


def processing(
    destination: str,
    headers: Mapping[str, Any] | None,
    attributes: Mapping[str, Any],
) -> contextlib.AbstractContextManager[Span | None]:
    """A CONSUMER span ``"<destination> process"`` for a message carrying a trace context: its
    parent and link are that context. A message without one runs untraced; one whose context
    does not parse starts a new trace."""
    if not headers or not isinstance(headers, Mapping):
        return _NO_SPAN
    tracer = _tracer()
    if tracer is None:
        return _NO_SPAN
    if not any(name in headers for name in propagate.get_global_textmap().fields):
        return _NO_SPAN
    context = propagate.extract(_carrier(headers))
    creation = trace.get_current_span(context).get_span_context()
    return tracer.start_as_current_span(
        f"{destination} process",
        context=context,  # no valid span in it (a malformed one): the span starts a new trace
        kind=SpanKind.CONSUMER,
        links=[Link(creation)] if creation.is_valid else None,
        attributes={
            **_messaging(destination, "process", "process"),
            **{k: v for k, v in attributes.items() if v is not None},
        },
    )


def _message_span(message: Any) -> contextlib.AbstractContextManager[Span | None]:
    return processing(
        message.queue,
        message.headers,
        {
            "messaging.message.id": message.iid,
            "messaging.consumer.group.name": message.consumer,
        },
    )


def traced_handler(spec: Spec) -> Spec:
    """The queue handler ``spec`` with its function run inside a message's CONSUMER span (the
    same spec when the API is not installed, and for a process-pool handler: its function is
    pickled by name for the child, which has no tracer provider of the worker's)."""
    if trace is None or spec.pool == "process":
        return spec
    fn = spec.fn
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(message: Any) -> Any:
            with _message_span(message):
                return await fn(message)

        return dataclasses.replace(spec, fn=run_async)

    @functools.wraps(fn)
    def run(message: Any) -> Any:
        with _message_span(message):
            return fn(message)

    return dataclasses.replace(spec, fn=run)


def traced_event_handler(fn: Handler, group: str) -> Handler:
    """A stream group's handler ``fn(conn, event)`` run inside each event's CONSUMER span (``fn``
    itself when the API is not installed)."""
    if trace is None:
        return fn
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(conn: Any, event: Any) -> Any:
            with event_span(group, event):
                return await fn(conn, event)

        return run_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def run(conn: Any, event: Any) -> Any:
        with event_span(group, event):
            return fn(conn, event)

    return run  # type: ignore[return-value]


def event_span(group: str, event: Any) -> contextlib.AbstractContextManager[Span | None]:
    """The CONSUMER span a stream group's handler runs an event in (see :func:`processing`)."""
    if not event.headers:
        return _NO_SPAN
    return processing(
        event.topic,
        event.headers,
        {
            "messaging.message.id": str(event.id),
            "messaging.consumer.group.name": group,
        },
    )


# --- timer callbacks ------------------------------------------------------------------------


def with_trace(item: dict[str, Any]) -> dict[str, Any]:
    """A callback to create (a dict with ``context``) with the current trace context in its
    ``context`` under :data:`CALLBACK_KEY`: a copy; the same dict when tracing is off, no span
    is current, the key is set already, or ``context`` is not a mapping (for the check to
    refuse)."""
    if _tracer() is None or not isinstance(item, dict):
        return item
    context = item.get("context")
    if context is None:
        context = {}
    if not isinstance(context, Mapping) or CALLBACK_KEY in context:
        return item
    carried = _injected()
    if not carried:
        return item
    return {**item, "context": {**context, CALLBACK_KEY: carried}}


def without_carried(context: dict[str, Any]) -> dict[str, Any]:
    """A callback's ``context`` as its receiver gets it: without the trace context kept under
    :data:`CALLBACK_KEY` (that travels as the ``traceparent`` header), the same dict when it has
    none."""
    if CALLBACK_KEY not in context:
        return context
    return {k: v for k, v in context.items() if k != CALLBACK_KEY}


def calling(url: str, context: Mapping[str, Any]) -> contextlib.AbstractContextManager[Span | None]:
    """A CLIENT span ``"callback <host>"`` for a callback created in a trace (its parent is
    the creation's context); a callback created outside any trace is called untraced."""
    carried = context.get(CALLBACK_KEY) if context else None
    if not isinstance(carried, Mapping) or trace is None:
        return _NO_SPAN
    tracer = _tracer()
    if tracer is None:
        return _NO_SPAN
    parts = urlsplit(url)
    return tracer.start_as_current_span(
        f"callback {parts.hostname}",
        context=propagate.extract(_carrier(carried)),  # a malformed one: a new trace
        kind=SpanKind.CLIENT,
        attributes={
            "http.request.method": "POST",
            "server.address": parts.hostname or "",
            "server.port": parts.port or (443 if parts.scheme == "https" else 80),
            "url.scheme": parts.scheme,
        },
    )


def request_headers(context: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The trace headers of a call of a callback with this ``context``, made inside the span
    of :func:`calling` (none for a callback created outside any trace, or tracing off)."""
    if CALLBACK_KEY not in context or _tracer() is None:
        return []
    return list(_injected().items())


def called(span: Span | None, outcome: str, status_code: int | None, error: str | None) -> None:
    """Record a callback call's response on its CLIENT span (an error status unless 2xx)."""
    if span is None:
        return
    if status_code is not None:
        span.set_attribute("http.response.status_code", status_code)
    if outcome != "ok":
        span.set_attribute("error.type", str(status_code) if status_code else outcome)
        span.set_status(Status(StatusCode.ERROR, error or outcome))
