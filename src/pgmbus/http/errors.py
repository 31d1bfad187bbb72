"""The one error shape of the HTTP API, ``{"error": code, "message": text}``, and its handlers.

Codes are short snake_case words: a typed error's class name (``NotFound`` -> ``not_found``,
:func:`code_of`), ``refused_url`` for a URL the timers' network guard refuses, else one per
HTTP status (``unauthorized``, ``forbidden``, ``too_large``, ``invalid_request``, ...). A 422
names the fields that are wrong and why, never echoing the input back (each part of a field's
path cut to a few dozen characters, the whole message to ``MAX_MESSAGE`` characters).
"""

from __future__ import annotations

import logging
import re
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from pgmbus.errors import (
    AlreadyExists,
    InvalidArgument,
    InvalidName,
    InvalidPayload,
    InvalidSelector,
    InvalidState,
    LockNotAvailable,
    NotFound,
    PermissionDenied,
    PgmbusError,
    StaleLease,
)
from pgmbus.reconnect import is_transient
from pgmbus.timers.netguard import RefusedURL

STATUS_OF: list[tuple[type[PgmbusError], int]] = [
    (NotFound, 404),
    (AlreadyExists, 409),
    (InvalidState, 409),
    (StaleLease, 409),
    (LockNotAvailable, 409),
    (PermissionDenied, 403),
    (InvalidArgument, 422),
    (InvalidPayload, 422),
    (InvalidName, 422),
    (InvalidSelector, 422),
]

CODE_OF_STATUS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_requests",
    503: "unavailable",
}

log = logging.getLogger("pgmbus.http")

MAX_MESSAGE = 1000
_MAX_ITEMS = 5
_MAX_LOC_PART = 40


class ErrorBody(BaseModel):
    """Every 4xx answer: a stable code and a human-readable message (never the input echoed)."""

    error: str
    message: str


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": name}
    for code, name in CODE_OF_STATUS.items()
    if code in (401, 403, 404, 409, 413, 422)
}


def error_response(
    status: int, error: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """A JSON error answer of the one shape (the message cut to a bounded length)."""
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    return JSONResponse({"error": error, "message": message}, status, headers=headers)


def code_of(exc: PgmbusError) -> str:
    """``NotFound`` -> ``not_found``: the short code of a typed error."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(exc).__name__).lower()


def validation_message(exc: RequestValidationError) -> str:
    """What is wrong with a request, by location, without the offending input (a field name
    is input too: an unknown key is cut to a few dozen characters)."""
    parts = []
    errors = exc.errors()
    for err in errors[:_MAX_ITEMS]:
        where = ".".join(str(p)[:_MAX_LOC_PART] for p in err.get("loc", ()))[:200]
        parts.append(f"{where}: {str(err.get('msg', 'invalid'))[:200]}")
    if len(errors) > _MAX_ITEMS:
        parts.append(f"and {len(errors) - _MAX_ITEMS} more")
    return "; ".join(parts) or "invalid request"


def _unavailable(request: Request, exc: BaseException) -> JSONResponse:
    """503 for a database that cannot answer now (a restart, a cut connection, a timeout):
    the client may retry; a write's outcome is unknown (retry a post with its iid)."""
    log.warning("%s %s: database unavailable: %s", request.method, request.url.path, exc)
    return error_response(
        503,
        "unavailable",
        "the database is unavailable right now; retry (a write may or may not have happened)",
        {"Retry-After": "1"},
    )


def install(app: FastAPI) -> None:
    """Register the handlers that turn every error into the one shape."""

    @app.exception_handler(PgmbusError)
    async def _pgmbus(request: Request, exc: PgmbusError) -> JSONResponse:
        status = next((code for cls, code in STATUS_OF if isinstance(exc, cls)), 500)
        sqlstate = exc.sqlstate or ""
        if status == 500 and sqlstate == "23505":
            return error_response(409, "already_exists", exc.message)
        if status == 500 and sqlstate[:2] in ("22", "23"):
            # a data exception or a violated constraint (a NUL in jsonb text, a number out of
            # range, a CHECK on a name): the input's fault, not the server's
            return error_response(422, "invalid_payload", exc.message)
        if status == 500 and not sqlstate and isinstance(exc.__cause__, psycopg.DataError):
            # refused by the driver before it reached the server (a NUL byte in a text
            # parameter), then translated by a client function: still the input's fault
            return error_response(422, "invalid_payload", exc.message)
        if status == 500 and is_transient(exc):
            return _unavailable(request, exc)
        if status == 500:
            log.error("%s %s failed: %s", request.method, request.url.path, exc)
            return error_response(500, "internal_error", "the database call failed")
        return error_response(status, code_of(exc), exc.message)

    @app.exception_handler(RefusedURL)
    async def _refused(_request: Request, exc: RefusedURL) -> JSONResponse:
        # a timer URL the network guard refuses (the guard's reason names the host, not the path)
        return error_response(422, "refused_url", str(exc))

    @app.exception_handler(UnicodeEncodeError)
    async def _unicode(_request: Request, _exc: UnicodeEncodeError) -> JSONResponse:
        # JSON may escape lone surrogates (\ud800), which no database text can hold
        return error_response(
            422, "invalid_payload", "text must be valid Unicode (a lone surrogate)"
        )

    @app.exception_handler(psycopg.Error)
    async def _database(request: Request, exc: psycopg.Error) -> JSONResponse:
        if is_transient(exc):
            return _unavailable(request, exc)
        log.error("%s %s failed: %s", request.method, request.url.path, exc)
        return error_response(500, "internal_error", "the database call failed")

    @app.exception_handler(psycopg.DataError)
    async def _data(_request: Request, exc: psycopg.DataError) -> JSONResponse:
        # refused by the driver before it reaches the server (a NUL byte in a text parameter)
        return error_response(422, "invalid_payload", str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:
            # FastAPI's answer to a body it cannot decode (not UTF-8, not JSON)
            return error_response(422, "invalid_request", "the request body is not valid JSON")
        code = CODE_OF_STATUS.get(exc.status_code, f"http_{exc.status_code}")
        headers = dict(exc.headers) if exc.headers else None
        if exc.status_code == 405:
            allow = allowed_methods(request, (headers or {}).get("Allow", ""))
            headers = {**(headers or {}), "Allow": allow}
        return error_response(exc.status_code, code, str(exc.detail), headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "invalid_request", validation_message(exc))

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        # what no handler above expected (a bug): the one shape still, never a text page; the
        # traceback goes to the log, not to the client
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return error_response(500, "internal_error", "the request failed on the server")


def allowed_methods(request: Request, fallback: str) -> str:
    """Every method the OpenAPI schema documents for the request's path (a 405's ``Allow``).

    Starlette names only the methods of the first route whose path matched, but one path has a
    route per method here (GET and POST /v1/queues); RFC 9110 wants them all. A path the
    schema does not document keeps Starlette's ``fallback``.
    """
    parts = request.url.path.split("/")
    methods: set[str] = set()
    for template, item in request.app.openapi().get("paths", {}).items():
        pattern = template.split("/")
        if len(pattern) == len(parts) and all(
            p == q or (p.startswith("{") and p.endswith("}") and q != "")
            for p, q in zip(pattern, parts, strict=True)
        ):
            methods.update(m.upper() for m in item if m in _METHODS)
    return ", ".join(sorted(methods)) if methods else fallback


_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def document(app: FastAPI) -> None:
    """Make the OpenAPI schema say what the handlers do: every 422 is an ``ErrorBody``."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        spec = build()
        ref = {"$ref": "#/components/schemas/ErrorBody"}
        for ops in spec.get("paths", {}).values():
            for op in ops.values():
                answer = op.get("responses", {}).get("422")
                if answer is not None:
                    answer["content"] = {"application/json": {"schema": ref}}
                    answer["description"] = "invalid_request, ... (what is wrong, never the input)"
        schemas = spec.get("components", {}).get("schemas", {})
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        app.openapi_schema = spec
        return spec

    app.openapi = openapi  # type: ignore[method-assign]
