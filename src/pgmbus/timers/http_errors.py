"""Every error of the timers HTTP API in one shape: ``{"error": "<short code>", "message"}``.

401, 404, 409, 413 and 422 (and any other HTTP error) answer with this body. A 422 names the
fields that are wrong and why, never echoing the input back (field names are cut to a few
dozen characters, the whole message to ``MAX_MESSAGE`` characters).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from pgmbus.errors import (
    AlreadyExists,
    InvalidArgument,
    InvalidName,
    InvalidPayload,
    InvalidState,
    NotFound,
    PgmbusError,
)
from pgmbus.timers.netguard import RefusedURL

MAX_MESSAGE = 500
_STATUS_OF: list[tuple[type[PgmbusError], int]] = [
    (NotFound, 404),
    (AlreadyExists, 409),
    (InvalidState, 409),
    (InvalidArgument, 422),
    (InvalidPayload, 422),
    (InvalidName, 422),
]
_CODE_OF_STATUS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
}


def body(
    code: str, message: str, status: int, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The error answer ``{"error": code, "message": message}`` (message cut to size)."""
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    return JSONResponse({"error": code, "message": message}, status_code=status, headers=headers)


def code_of(exc: PgmbusError) -> str:
    """``NotFound`` -> ``not_found``: the short code of a typed error."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(exc).__name__).lower()


def validation_message(errors: Sequence[Any]) -> str:
    """``field.path: why`` for the first few errors, without their input values."""
    parts: list[str] = []
    for error in list(errors)[:5]:
        loc = [str(p)[:40] for p in error.get("loc", ()) if p not in ("body", "query", "path")]
        parts.append(f"{'.'.join(loc) or 'body'}: {str(error.get('msg', 'invalid'))[:150]}")
    if len(errors) > 5:
        parts.append(f"and {len(errors) - 5} more")
    return "; ".join(parts)


def install(app: FastAPI) -> None:
    """Answer every error of ``app`` in the one shape."""

    @app.exception_handler(PgmbusError)
    async def _pgmbus_error(_request: Request, exc: PgmbusError) -> JSONResponse:
        status = next((code for cls, code in _STATUS_OF if isinstance(exc, cls)), 500)
        return body(code_of(exc), exc.message, status)

    @app.exception_handler(RefusedURL)
    async def _refused(_request: Request, exc: RefusedURL) -> JSONResponse:
        return body("refused_url", str(exc), 422)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return body("invalid_request", validation_message(exc.errors()), 422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _CODE_OF_STATUS.get(exc.status_code, f"http_{exc.status_code}")
        return body(code, str(exc.detail), exc.status_code, exc.headers)
