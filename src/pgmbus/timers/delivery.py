"""One delivery of a claimed callback: signed HTTP POSTs with fast retries, and their outcome.

The request carries a JSON body (ids, times, context, attempt and call numbers), a
``webhook-id`` that stays the same for every attempt of the callback (receivers deduplicate on
it), ``webhook-timestamp`` and ``webhook-signature`` (``v1,`` + base64 HMAC-SHA256 of
``id.timestamp.body``; the key is the owner client's ``whsec_<base64>`` secret base64-decoded, so
the Standard Webhooks libraries verify it), ``pgmbus-attempt`` (the claim number) and
``pgmbus-call`` (which call of that attempt: 1, then 2, 3... for its fast retries).
Outcomes: ``ok`` (2xx), ``reject`` (the response carries ``X-Ya-CallMeBack-Notify-Reject``),
``refused`` (the URL or a redirect target is refused) or ``error`` (anything else, an exception
no rule expected included: see :func:`crashed`).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import hmac
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import httpx

from pgmbus import __version__, tracing
from pgmbus.timers.http11 import HTTPError, Origin, Pool, Response
from pgmbus.timers.netguard import NetworkGuard, RefusedURL

log = logging.getLogger("pgmbus.timers.delivery")

REJECT_HEADER = "X-Ya-CallMeBack-Notify-Reject"
_REJECT = REJECT_HEADER.lower()  # response header names are kept in lower case
SECRET_PREFIX = "whsec_"  # noqa: S105 (the prefix of secrets, not one)
MAX_REDIRECTS = 5
MAX_RESPONSE_BYTES = 1 << 20
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class Claimed:
    """A callback claimed by a dispatcher: what it needs to call the URL."""

    id: int
    attempt: int
    webhook_id: UUID
    client_id: int
    group_key: str
    event_key: str
    run_at: datetime
    originally_run_at: datetime
    url: str
    context: dict[str, Any]
    fast_retries: int
    signing_secret: str
    claimed_until: datetime

    @functools.cached_property
    def due(self) -> float:
        """``run_at`` as Unix seconds."""
        return self.run_at.timestamp()

    @functools.cached_property
    def until(self) -> float:
        """``claimed_until`` as Unix seconds."""
        return self.claimed_until.timestamp()


@dataclass
class Call:
    """One HTTP call (one fast retry) of a delivery."""

    call: int
    started_at: float  # Unix seconds
    finished_at: float
    outcome: str
    status_code: int | None = None
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "started_at": datetime.fromtimestamp(self.started_at, UTC).isoformat(),
            "finished_at": datetime.fromtimestamp(self.finished_at, UTC).isoformat(),
            "outcome": self.outcome,
            "status_code": self.status_code,
            "error": self.error,
        }


@dataclass
class Delivery:
    """The result of delivering one claim: the final outcome and every call made."""

    callback: Claimed
    outcome: str
    calls: list[Call] = field(default_factory=list)

    def as_json(self, dispatcher: str) -> dict[str, Any]:
        return {
            "id": self.callback.id,
            "attempt": self.callback.attempt,
            "dispatcher": dispatcher,
            "outcome": self.outcome,
            "calls": [c.as_json() for c in self.calls],
        }


def body_of(cb: Claimed, call: int = 1) -> bytes:
    """The JSON body POSTed for call number ``call`` (from 1) of a callback's attempt."""
    doc = {
        "webhook_id": str(cb.webhook_id),
        "group_key": cb.group_key,
        "event_key": cb.event_key,
        "run_at": cb.run_at.isoformat(),
        "originally_run_at": cb.originally_run_at.isoformat(),
        "attempt": cb.attempt,
        "call": call,
        "context": tracing.without_carried(cb.context),
    }
    return json.dumps(doc, separators=(",", ":")).encode()


@functools.lru_cache(maxsize=4096)
def signing_key(secret: str) -> bytes:
    """The HMAC key of a signing secret: a Standard Webhooks ``whsec_<base64>`` secret is
    base64-decoded; any other string is used as its UTF-8 bytes."""
    if secret.startswith(SECRET_PREFIX):
        # as the Standard Webhooks libraries decode it (unpadded base64 accepted)
        return base64.b64decode(secret.removeprefix(SECRET_PREFIX) + "==")
    return secret.encode()


def sign(secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,`` + base64 HMAC-SHA256 of ``id.timestamp.body``."""
    message = f"{webhook_id}.{timestamp}.".encode() + body
    # the one-shot form runs in C (OpenSSL) without building an HMAC object per call
    digest = hmac.digest(signing_key(secret), message, "sha256")
    return "v1," + base64.b64encode(digest).decode()


_USER_AGENT = f"pgmbus/{__version__}"


def headers_of(cb: Claimed, body: bytes, call: int = 1) -> list[tuple[str, str]]:
    """The headers of call number ``call`` (from 1) of a callback's attempt (signed at the time
    of the call), without ``host``."""
    timestamp = int(time.time())
    webhook_id = str(cb.webhook_id)
    return [
        ("content-type", "application/json"),
        ("user-agent", _USER_AGENT),
        ("webhook-id", webhook_id),
        ("webhook-timestamp", str(timestamp)),
        ("webhook-signature", sign(cb.signing_secret, webhook_id, timestamp, body)),
        ("pgmbus-attempt", str(cb.attempt)),
        ("pgmbus-call", str(call)),
        *tracing.request_headers(cb.context),
    ]


def _line_of(url: httpx.URL) -> str:
    """The request line and ``host`` header of a POST to ``url``."""
    return f"POST {url.raw_path.decode('ascii')} HTTP/1.1\r\nhost: {url.netloc.decode('ascii')}"


def _origin_of(url: httpx.URL, address: str, host: str) -> Origin:
    port = url.port or (443 if url.scheme == "https" else 80)
    return Origin(url.scheme, address, port, host)


# a callback's URL (a string) gives the same request line and origin at every call: both are
# remembered by the string (an httpx.URL, a redirect's, is cheaper to rebuild than to hash)
_cached_line = functools.lru_cache(maxsize=4096)(lambda url: _line_of(httpx.URL(url)))
_cached_origin = functools.lru_cache(maxsize=4096)(
    lambda url, address, host: _origin_of(httpx.URL(url), address, host)
)


def _request_head(line: str, headers: list[tuple[str, str]], length: int) -> bytes:
    """The request line, ``host`` and other headers of a POST, ending with the blank line."""
    lines = [line]
    lines += [f"{name}: {value}" for name, value in headers]
    lines.append(f"content-length: {length}\r\n\r\n")
    return "\r\n".join(lines).encode("latin-1")


async def _post(
    pool: Pool,
    guard: NetworkGuard,
    url: str,
    body: bytes,
    headers: list[tuple[str, str]],
) -> Response:
    """POST, following redirects only to targets the guard allows (re-checked per hop)."""
    current: str | httpx.URL = url
    for _hop in range(MAX_REDIRECTS + 1):
        target = await guard.check(current)
        if isinstance(current, str):
            line = _cached_line(current)
            origin = _cached_origin(current, target.address, target.host)
        else:
            line, origin = _line_of(target.url), _origin_of(target.url, target.address, target.host)
        response = await pool.post(origin, _request_head(line, headers, len(body)), body)
        location = response.headers.get("location")
        if response.status_code not in _REDIRECTS or not location:
            return response
        try:
            current = target.url.join(location)
        except httpx.InvalidURL as exc:  # not an HTTPError: a refused redirect, not a crash
            raise RefusedURL(f"redirect to an invalid URL: {exc}") from exc
    raise RefusedURL(f"more than {MAX_REDIRECTS} redirects")


async def call_once(
    pool: Pool,
    guard: NetworkGuard,
    cb: Claimed,
    index: int,
    timeout_s: float = 10.0,
    body: bytes | None = None,
) -> Call:
    """Make call ``index`` (from 0) of ``cb``'s attempt and classify its result.

    The receiver sees it as call ``index + 1`` (``pgmbus-call`` and the body's ``call``). The
    whole call, redirects included, is cut off after ``timeout_s`` seconds.
    """
    if body is None:
        body = body_of(cb, index + 1)
    headers = headers_of(cb, body, index + 1)
    started = time.time()
    try:
        async with asyncio.timeout(timeout_s):
            response = await _post(pool, guard, cb.url, body, headers)
    except RefusedURL as exc:
        return Call(index, started, time.time(), "refused", error=str(exc))
    except TimeoutError as exc:
        return Call(index, started, time.time(), "error", error=f"timeout: {exc!r}")
    except (HTTPError, OSError) as exc:  # refused, reset, TLS failure, bad response...
        error = f"{type(exc).__name__}: {exc}"
        return Call(index, started, time.time(), "error", error=error)
    finished = time.time()
    code = response.status_code
    if _REJECT in response.headers:
        return Call(index, started, finished, "reject", code)
    if 200 <= code < 300:
        return Call(index, started, finished, "ok", code)
    return Call(index, started, finished, "error", code, error=f"HTTP {code}")


def crashed(index: int, started: float, exc: Exception) -> Call:
    """Call ``index`` of an attempt that raised what no rule expected (a bug), as an ``error``.

    Recorded like any failed call and retried as the callback's policy says (the cause may be
    passing; the retries end at ``stop_after_delay_s``): left unrecorded, the claim expired and
    the callback stayed pending for ever, its URL called again at each expiry.
    """
    error = f"internal error: {type(exc).__name__}: {exc}"
    return Call(index, started, time.time(), "error", error=error)


async def deliver(
    pool: Pool,
    guard: NetworkGuard,
    cb: Claimed,
    *,
    timeout_s: float = 10.0,
    fast_retry_delay_s: float = 0.05,
) -> Delivery:
    """Call ``cb`` up to ``1 + fast_retries`` times (short doubling pauses between calls).

    Each call, redirects included, is cut off after ``timeout_s`` seconds.
    """
    delivery = Delivery(cb, "error")
    for index in range(cb.fast_retries + 1):
        if index:
            await asyncio.sleep(min(fast_retry_delay_s * 2 ** (index - 1), 1.0))
        started = time.time()
        try:
            with tracing.calling(cb.url, cb.context) as span:
                result = await call_once(pool, guard, cb, index, timeout_s)
                tracing.called(span, result.outcome, result.status_code, result.error)
        except Exception as exc:  # one callback's bug must not lose the calls already made
            log.exception("call %d of callback %s crashed", index + 1, cb.id)
            result = crashed(index, started, exc)
        delivery.calls.append(result)
        if result.outcome != "error":
            delivery.outcome = result.outcome
            break
    return delivery
