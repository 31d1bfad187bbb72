"""A tiny HTTP health endpoint: 200 while the worker's loops run, 503 otherwise; /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable

from pgmbus.workers.metrics import CONTENT_TYPE, WorkerMetrics


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``:PORT``, meaning 127.0.0.1) as a pair; ValueError when malformed."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"expected HOST:PORT (port 0 to 65535), not {text!r}")
    return (host.strip("[]") or "127.0.0.1", int(port))


def _path(request: bytes) -> str:
    """The path of an HTTP request's first line (``GET /metrics?x HTTP/1.1`` -> ``/metrics``)."""
    parts = request.split(b"\r\n", 1)[0].split(b" ")
    target = parts[1].decode("latin-1") if len(parts) >= 2 else "/"
    return target.split("?", 1)[0]


async def serve_health(
    host: str,
    port: int,
    status: Callable[[], dict[str, bool]],
    metrics: WorkerMetrics | None = None,
) -> asyncio.Server:
    """Answer ``/metrics`` with ``metrics`` (Prometheus text format), every other request with
    the loops' status as JSON: 200 when all are up, else 503.

    ``status()`` maps each loop's name to whether it is up; an empty map (not started, or
    stopping) counts as down.
    """

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = b""
            with contextlib.suppress(asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            if metrics is not None and _path(request) == "/metrics":
                code, kind, body = "200 OK", CONTENT_TYPE, metrics.exposition()
            else:
                loops = status()
                up = bool(loops) and all(loops.values())
                code = "200 OK" if up else "503 Service Unavailable"
                kind = "application/json"
                report = {"status": "ok" if up else "unavailable", "loops": loops}
                body = json.dumps(report).encode()
            head = (
                f"HTTP/1.1 {code}\r\n"
                f"Content-Type: {kind}\r\n"
                f"Content-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            writer.write(head + body)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    return await asyncio.start_server(answer, host, port)
