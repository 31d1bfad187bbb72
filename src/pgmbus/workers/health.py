"""A tiny HTTP health endpoint: 200 while the worker's loops run, 503 otherwise."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``:PORT``, meaning 127.0.0.1) as a pair; ValueError when malformed."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"expected HOST:PORT (port 0 to 65535), not {text!r}")
    return (host.strip("[]") or "127.0.0.1", int(port))


async def serve_health(
    host: str, port: int, status: Callable[[], dict[str, bool]]
) -> asyncio.Server:
    """Answer every HTTP request with the loops' status as JSON: 200 when all are up, else 503.

    ``status()`` maps each loop's name to whether it is up; an empty map (not started, or
    stopping) counts as down.
    """

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            with contextlib.suppress(asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            loops = status()
            up = bool(loops) and all(loops.values())
            body = json.dumps({"status": "ok" if up else "unavailable", "loops": loops}).encode()
            head = (
                f"HTTP/1.1 {'200 OK' if up else '503 Service Unavailable'}\r\n"
                "Content-Type: application/json\r\n"
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
