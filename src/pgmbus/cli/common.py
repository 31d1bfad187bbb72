"""What every command shares: the ``--dsn`` option, connections, and error reporting."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Annotated, Any, LiteralString, ParamSpec, TypeVar

import psycopg
import typer
from psycopg.rows import dict_row
from rich.console import Console
from rich.markup import escape

from pgmbus.dsn import resolve_dsn
from pgmbus.errors import PgmbusError, translate, translating

console = Console()
err_console = Console(stderr=True)

DsnOption = Annotated[
    str | None,
    typer.Option(
        "--dsn",
        help="Connection string; default: $PGMBUS_DSN, else the embedded cluster.",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]

P = ParamSpec("P")
R = TypeVar("R")


def reports_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Print pgmbus and database errors as one clear line and exit with status 1."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except PgmbusError as exc:
            err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(1) from exc
        except psycopg.Error as exc:
            err_console.print(f"[bold red]error:[/] {escape(str(translate(exc)))}", highlight=False)
            raise typer.Exit(1) from exc

    return wrapper


@contextmanager
def connect(dsn: str | None) -> Iterator[psycopg.Connection[Any]]:
    """Open a connection by the DSN rule (starting the embedded cluster if it is the one)."""
    with psycopg.connect(resolve_dsn(dsn), autocommit=True) as conn:
        yield conn


def print_json(value: object) -> None:
    """Print a JSON document on stdout (no colour, so that it can be piped)."""
    typer.echo(json.dumps(value, indent=2, default=str))


def query_rows(
    dsn: str | None, query: LiteralString, params: dict[str, Any]
) -> list[dict[str, Any]]:
    """Run one named query (from a ``pgmbus/sql`` file) in autocommit; return its rows as dicts."""
    with (
        psycopg.connect(resolve_dsn(dsn), autocommit=True, row_factory=dict_row) as conn,
        translating(),
    ):
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description is not None else []
