"""Typed exceptions for pgmbus, mapped from the SQLSTATEs that the SQL API raises.

The SQL API raises its own errors in the ``MB`` SQLSTATE class (``MB001`` and so on) with a
message that names the problem; ``translate`` turns a database error into the matching
exception class here, keeping the SQLSTATE the server raised (``.sqlstate``) and its message.
"""

from __future__ import annotations

import re
from types import TracebackType
from typing import Any, ClassVar


class PgmbusError(Exception):
    """Base class of every error pgmbus raises.

    Attributes
    ----------
    message:
        The message (the server's, with its detail and hint, for a database error).
    sqlstate:
        The SQLSTATE the server raised; for an error raised by the client itself, the one given
        to the constructor, else the class's ``default_sqlstate``.
    default_sqlstate:
        The class's own code (class attribute): the SQLSTATE that ``error_class_for`` maps to
        this class. Several codes can map to one class (``22023`` and ``MB006`` both give
        ``InvalidArgument``), so it may differ from ``sqlstate``.
    """

    default_sqlstate: ClassVar[str | None] = None

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.sqlstate: str | None = sqlstate if sqlstate is not None else self.default_sqlstate


# --- local (client side) errors ----------------------------------------------------------------
class ConfigurationError(PgmbusError):
    """A setting (DSN, environment variable, option) is missing or malformed."""


class HandlerNotImportable(ConfigurationError):
    """A process-pool handler cannot be sent to a child process (not a module-level function
    its module can import); the message names the handler."""


class DevDBError(PgmbusError):
    """The embedded PostgreSQL cluster could not be created, started or stopped."""


class SchemaError(PgmbusError):
    """The database's ``mbus`` schema cannot be installed or used by this package."""


class SchemaTooNewError(SchemaError):
    """The database has migrations applied that this package does not know."""


class MigrationChecksumError(SchemaError):
    """An applied migration's recorded checksum differs from the package's file."""


class SchemaNotInstalledError(SchemaError):
    """The database has no ``mbus`` schema; run ``pgmbus install``."""


class TimeoutExpired(PgmbusError):
    """A blocking call (consume, request) waited longer than its timeout."""


# --- errors raised by the SQL API ----------------------------------------------------------------
class DatabaseError(PgmbusError):
    """An error raised by the database that has no more specific class."""


class InvalidName(DatabaseError):
    """A queue, consumer, group or other name breaks the naming rule."""

    default_sqlstate = "MB001"


class NotFound(DatabaseError):
    """The named queue, consumer, group, message or callback does not exist."""

    default_sqlstate = "MB002"


class AlreadyExists(DatabaseError):
    """An object with that name exists already."""

    default_sqlstate = "MB003"


class InvalidSelector(DatabaseError):
    """A selector or condition is not a valid, static SQL expression."""

    default_sqlstate = "MB004"


class InvalidArgument(DatabaseError):
    """An argument is out of range or contradicts another one, or has the wrong type (the
    message starts with its name)."""

    default_sqlstate = "MB006"


class InvalidPayload(InvalidArgument):
    """A payload, headers or properties value has the wrong shape (for example not an object,
    or holding a value JSON in PostgreSQL cannot store)."""

    default_sqlstate = "MB005"


class StaleLease(DatabaseError):
    """A lease token no longer owns its message (expired, acked, or reclaimed)."""

    default_sqlstate = "MB007"


class InvalidState(DatabaseError):
    """The operation is not allowed in the object's current state."""

    default_sqlstate = "MB008"


class LogInconsistent(DatabaseError):
    """The stream log's stored transaction ids do not belong to this cluster (after a restore)."""

    default_sqlstate = "MB009"


class QueueMoved(InvalidState):
    """The queue has moved to another server of a scale-out map; ``server`` names it.

    Raised by the server the queue moved away from, for every post that still reaches it
    (a client with a stale placement map); :class:`pgmbus.scaleout.Cluster` reads the map
    again and posts to the new server by itself.
    """

    default_sqlstate = "MB010"

    @property
    def server(self) -> str | None:
        """The server the queue lives on now, as the refusing server named it."""
        found = _MOVED_TO.search(self.message)
        return found.group(1) if found else None


_MOVED_TO = re.compile(r"has moved to server '([^']*)'")


class PermissionDenied(DatabaseError):
    """The current role may not perform the operation."""

    default_sqlstate = "42501"


class LockNotAvailable(DatabaseError):
    """A lock could not be taken without waiting and the caller asked not to wait."""

    default_sqlstate = "55P03"


class PrimaryRequired(DatabaseError):
    """The operation writes, and the server is a read-only standby (or the transaction is
    read-only): it needs the primary. A DSN with several hosts and
    ``target_session_attrs=read-write`` reaches whichever node is primary (docs/ha.md)."""

    default_sqlstate = "25006"


_BY_SQLSTATE: dict[str, type[DatabaseError]] = {
    cls.default_sqlstate: cls
    for cls in (
        InvalidName,
        NotFound,
        AlreadyExists,
        InvalidSelector,
        InvalidPayload,
        InvalidArgument,
        StaleLease,
        InvalidState,
        LogInconsistent,
        QueueMoved,
        PermissionDenied,
        LockNotAvailable,
        PrimaryRequired,
    )
    if cls.default_sqlstate is not None
}
# Standard SQLSTATEs that mean the same thing as one of ours.
_BY_SQLSTATE.update(
    {
        "22023": InvalidArgument,  # invalid_parameter_value
        "22P02": InvalidArgument,  # invalid_text_representation
        "22003": InvalidArgument,  # numeric_value_out_of_range
        "42P01": NotFound,  # undefined_table
        "42883": NotFound,  # undefined_function
        "42710": AlreadyExists,  # duplicate_object
        "42P07": AlreadyExists,  # duplicate_table
    }
)


_NUMERIC_ARGUMENT = re.compile(r"^(function|procedure) \S+\(.*\bnumeric\b.*\) does not exist$")


def error_class_for(sqlstate: str | None) -> type[DatabaseError]:
    """Return the exception class for a SQLSTATE (``DatabaseError`` when none is specific)."""
    if sqlstate is None:
        return DatabaseError
    return _BY_SQLSTATE.get(sqlstate, DatabaseError)


def translate(exc: BaseException) -> PgmbusError:
    """Turn a psycopg error (anything with ``sqlstate`` and ``diag``) into a pgmbus error."""
    if isinstance(exc, PgmbusError):
        return exc
    sqlstate: str | None = getattr(exc, "sqlstate", None)
    diag: Any = getattr(exc, "diag", None)
    message = getattr(diag, "message_primary", None) or str(exc).strip() or type(exc).__name__
    detail = getattr(diag, "message_detail", None)
    hint = getattr(diag, "message_hint", None)
    text = message
    if sqlstate == "42883" and _NUMERIC_ARGUMENT.search(message):
        # psycopg sends a Python int beyond bigint as numeric, so the call names no function:
        # the caller's number is the problem, not a missing function
        sqlstate, hint = "22003", None
        text = message = (
            f"a number is out of range (at most {2**63 - 1:,} for an id or a count): {message}"
        )
    if sqlstate == "0A000" and message.endswith("during recovery"):
        # a standby refuses some writes before its read-only check (a queue post touches an
        # unlogged table first): the same refusal, the same class
        sqlstate = "25006"
    if sqlstate == "25006":
        # the server's words name the statement, not what to do about it
        text = message = f"this operation needs the primary (the server is read-only): {message}"
        hint = hint or (
            "connect to the primary, e.g. a DSN with every node's host and "
            "target_session_attrs=read-write"
        )
    if detail:
        text += f"\nDETAIL: {detail}"
    if hint:
        text += f"\nHINT: {hint}"
    error = error_class_for(sqlstate)(text, sqlstate=sqlstate)
    error.__cause__ = exc
    return error


class _Translating:
    """The block of ``translating()``; a plain and an async context manager both."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None or isinstance(exc, PgmbusError) or not isinstance(exc, Exception):
            return
        if getattr(exc, "sqlstate", None) is None:
            return
        raise translate(exc) from exc

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(kind, exc, tb)


def translating() -> _Translating:
    """Re-raise database errors inside the block as typed pgmbus errors.

    Use it as ``with translating():`` or, next to async context managers, as
    ``async with translating(), conn.cursor() as cur:``.
    """
    return _Translating()
