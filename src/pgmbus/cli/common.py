"""What every command shares: ``--dsn``, checked connections, tables that wrap, JSON, errors."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import wraps
from typing import Annotated, Any, ParamSpec, TypeVar

import psycopg
import typer
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool
from rich.console import Console, ConsoleDimensions
from rich.table import Column, Table

from pgmbus.cli import deadline
from pgmbus.cli.errors import fail
from pgmbus.data.install import ledger_exists
from pgmbus.data.queues import queue_exists
from pgmbus.data.streams import group_exists
from pgmbus.dsn import resolve_dsn
from pgmbus.errors import NotFound, SchemaNotInstalledError, translating
from pgmbus.queues import Bus

PLAIN_WIDTH = 100_000
"""Line width when the output is not a terminal: a row of a table is one line, never wrapped."""


class CliConsole(Console):
    """A console whose output, when it is not a terminal (a pipe, a file), is never wrapped.

    Rich wraps at 80 columns (or ``$COLUMNS``) when it cannot ask a terminal; piped tables then
    broke rows over several lines, which ``grep`` and ``awk`` cannot read. A width set
    explicitly still wins; ``$COLUMNS`` only counts for a terminal.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if "width" not in options:
            self._width = None  # rich took it from $COLUMNS; ``size`` reads that for terminals

    @property
    def size(self) -> ConsoleDimensions:
        """The terminal's size; ``PLAIN_WIDTH`` wide when not a terminal."""
        size = super().size
        if self._width is None and not self.is_terminal:
            return ConsoleDimensions(PLAIN_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


console = CliConsole()
err_console = CliConsole(stderr=True)

CONNECT_TIMEOUT_S = 4
"""Seconds a connection of a command waits for the server (when the DSN and
``$PGCONNECT_TIMEOUT`` say nothing); the first one gets what is left of 5 s since the command
started (``pgmbus.cli.deadline``), so a bad or unreachable DSN fails within 5 s."""

RESOLVE_TIMEOUT_S = 3
"""Seconds a command waits for the host name of the DSN to resolve."""

DsnOption = Annotated[
    str | None,
    typer.Option(
        "--dsn",
        help="Connection string; default: $PGMBUS_DSN, else libpq's PG* variables, else the "
        "running embedded cluster (pgmbus dev start).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]

P = ParamSpec("P")
R = TypeVar("R")


def reports_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Report any user error of the command as one line on stderr and a non-zero exit.

    The root command does the same for every command; this keeps a command that is called
    directly (as a function) just as quiet.
    """

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:
            try:
                fail(exc)
            except SystemExit as done:
                raise typer.Exit(int(done.code or 1)) from None

    return wrapper


# --- the database ---------------------------------------------------------------------------------
def with_connect_timeout(dsn: str) -> str:
    """Add ``connect_timeout`` to a DSN that (with the environment) sets none."""
    if "connect_timeout" in conninfo_to_dict(dsn) or os.environ.get("PGCONNECT_TIMEOUT"):
        return dsn
    return make_conninfo(dsn, connect_timeout=CONNECT_TIMEOUT_S)


def _resolvable(host: str) -> str | None:
    """Why ``host`` cannot be resolved within the connect timeout (None when it can)."""
    outcome: list[str | None] = []

    def lookup() -> None:
        try:
            socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
            outcome.append(None)
        except OSError as exc:
            outcome.append(str(exc))

    # getaddrinfo has no timeout (a resolver that does not answer costs 5 s per try), and
    # libpq's connect_timeout starts after it: look the name up in a thread we can stop waiting for.
    thread = threading.Thread(target=lookup, daemon=True)
    thread.start()
    wait = min(RESOLVE_TIMEOUT_S, deadline.remaining())
    thread.join(wait)
    return outcome[0] if outcome else f"no answer from the resolver within {wait:.0f} s"


def check_hosts(dsn: str) -> None:
    """Fail fast (``OperationalError``) when no host named by the DSN resolves in time."""
    params = conninfo_to_dict(dsn)
    if params.get("hostaddr") or os.environ.get("PGHOSTADDR"):
        return
    named = str(params.get("host") or os.environ.get("PGHOST") or "")
    hosts = [h.strip() for h in named.split(",")]
    names = [h for h in hosts if h and not h.startswith(("/", "@")) and not _is_address(h)]
    if not names or len(names) < len(hosts):
        return  # a socket or an address is there to try
    problems = [(name, _resolvable(name)) for name in names]
    if all(problem is not None for _, problem in problems):
        name, problem = problems[0]
        raise psycopg.OperationalError(f"failed to resolve host {name!r}: {problem}")


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _check_schema(conn: psycopg.Connection[Any]) -> None:
    if not ledger_exists(conn):
        raise SchemaNotInstalledError(
            f"the mbus schema is not installed in database {conn.info.dbname!r}: "
            "run `pgmbus install`"
        )


def _first_connection(given: str, target: str) -> psycopg.Connection[Any]:
    """Connect within the command's 5 s, unless the DSN or the environment set a timeout."""
    if "connect_timeout" in conninfo_to_dict(given) or os.environ.get("PGCONNECT_TIMEOUT"):
        return psycopg.connect(target, autocommit=True)
    return deadline.connect_within(target, deadline.remaining())


def database(dsn: str | None, *, need_schema: bool = True) -> str:
    """Resolve the DSN by the rule, connect once (fails fast) and check the schema.

    Returns the DSN to hand to pools and workers, with a connect timeout.
    """
    given = resolve_dsn(dsn)
    target = with_connect_timeout(given)
    check_hosts(target)
    with _first_connection(given, target) as conn, translating():
        if need_schema:
            _check_schema(conn)
    return target


@contextmanager
def connect(dsn: str | None, *, need_schema: bool = True) -> Iterator[psycopg.Connection[Any]]:
    """Open an autocommit connection by the DSN rule, checked as ``database`` checks."""
    given = resolve_dsn(dsn)
    target = with_connect_timeout(given)
    check_hosts(target)
    with _first_connection(given, target) as conn:
        if need_schema:
            with translating():
                _check_schema(conn)
        yield conn


@contextmanager
def open_bus(dsn: str | None, *, max_size: int = 3) -> Iterator[Bus]:
    """A ``Bus`` on a pool that gives up after 5 s, after the DSN and the schema are checked."""
    pool: ConnectionPool[Any] = ConnectionPool(
        database(dsn),
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True},
        open=False,
        timeout=CONNECT_TIMEOUT_S + 1,
    )
    pool.open(wait=True, timeout=CONNECT_TIMEOUT_S + 1)
    try:
        yield Bus(pool=pool)
    finally:
        pool.close()


def require_queue(conn: psycopg.Connection[Any], queue: str) -> None:
    """Raise ``NotFound`` unless the queue exists."""
    if not queue_exists(conn, queue):
        raise NotFound(f"queue {queue!r} does not exist", sqlstate="MB002")


def require_group(conn: psycopg.Connection[Any], group: str) -> None:
    """Raise ``NotFound`` unless the stream consumer group exists."""
    if not group_exists(conn, group):
        raise NotFound(f"consumer group {group!r} does not exist", sqlstate="MB002")


# --- arguments ------------------------------------------------------------------------------------
def json_value(text: str, what: str) -> Any:
    """Parse the JSON argument ``what``; a bad one is a usage error (exit 2) naming it."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not valid JSON ({exc})", param_hint=what) from None
    except RecursionError:  # Python's parser gives up near 1,000 levels
        raise typer.BadParameter("JSON nested too deep", param_hint=what) from None


def json_object(text: str, what: str) -> dict[str, Any]:
    """Parse the JSON object argument ``what``: a usage error unless it is one."""
    value = json_value(text, what)
    if not isinstance(value, dict):
        raise typer.BadParameter(
            f"must be a JSON object, not {type(value).__name__}", param_hint=what
        )
    return value


def handler_spec(text: str) -> str:
    """Check a ``module:function`` argument by importing it; a usage error names the problem."""
    from pgmbus.queues.worker import load_handler

    try:
        load_handler(text)
    except (ImportError, AttributeError, ValueError) as exc:
        raise typer.BadParameter(f"cannot load {text!r}: {exc}") from None
    return text


def timestamp(text: str) -> datetime:
    """Parse an ISO 8601 timestamp (UTC when it names no zone)."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not an ISO 8601 timestamp") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


# --- output ---------------------------------------------------------------------------------------
def make_table(*headers: str, **kwargs: Any) -> Table:
    """A table whose cells wrap (``overflow="fold"``) instead of cutting names with an ellipsis.

    When the output is not a terminal the table is plain: no box lines, columns separated by
    spaces, one line per row (see ``CliConsole``).
    """
    columns = [Column(h, overflow="fold") for h in headers]
    if not console.is_terminal:
        kwargs["box"] = None
        kwargs.setdefault("pad_edge", False)
    return Table(*columns, **kwargs)


JSON_KEYS = {"qname": "queue", "cname": "consumer", "group_name": "group", "dead_letters": "dmq"}
"""Keys of SQL rows and Python records renamed in ``--json`` output to the words of
docs/vocabulary.md (the names ``pgmbus top --json`` and the metrics use)."""


def vocabulary_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with their top-level keys in the vocabulary's words (``JSON_KEYS``); values,
    payloads included, are untouched."""
    return [{JSON_KEYS.get(k, k): v for k, v in row.items()} for row in rows]


def print_json(value: object) -> None:
    """Print a JSON document on stdout (no colour, so that it can be piped)."""
    typer.echo(json.dumps(value, indent=2, default=str))
