"""Request body size limit (413 in the one error shape), enforced before a handler reads it."""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class _TooLarge(HTTPException):
    # an HTTPException: FastAPI re-raises those from body parsing (others become a 400), so the
    # app's handler answers it in the one error shape
    def __init__(self, limit: int) -> None:
        super().__init__(413, _message(limit), {"connection": "close"})


def _message(limit: int) -> str:
    return f"request body over {limit} bytes"


async def _send_413(send: Send, limit: int) -> None:
    body = json.dumps({"error": "too_large", "message": _message(limit)}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """ASGI middleware: answer 413 to a request whose body exceeds ``max_bytes``.

    A declared ``Content-Length`` over the limit is refused before any byte is read; a chunked
    body is counted as it arrives and refused as soon as it passes the limit.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await _send_413(send, self.max_bytes)
                    return
        received = 0
        started = False

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracking)
        except _TooLarge:
            if not started:
                await _send_413(send, self.max_bytes)
