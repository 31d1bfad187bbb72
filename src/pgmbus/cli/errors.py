"""How the command line fails: one line on stderr naming the problem, never a traceback.

Exit status 2 for a usage error (a bad option or argument, bad JSON, a bad ``module:function``,
a missing or malformed setting), 1 for a runtime error (the database refused, is unreachable,
has no mbus schema; an unknown queue or group), 130 when interrupted.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import psycopg
import psycopg_pool
import typer
from typer.core import TyperGroup

from pgmbus.errors import ConfigurationError, PgmbusError, translate

USAGE = 2
RUNTIME = 1
INTERRUPTED = 130


def one_line(text: str) -> str:
    """Fold a message's lines (libpq's, a DETAIL, a HINT) into one line."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def describe(exc: BaseException) -> tuple[str, int]:
    """Return the message and exit status for an error that ends a command."""
    if isinstance(exc, typer.TyperException) and callable(getattr(exc, "format_message", None)):
        # click's errors (typer vendors click): a UsageError has exit_code 2 and a context
        message = one_line(exc.format_message())
        status = int(getattr(exc, "exit_code", RUNTIME) or RUNTIME)
        ctx = getattr(exc, "ctx", None)
        if status == USAGE and ctx is not None:
            message += f" (see `{ctx.command_path} --help`)"
        return message, status
    if isinstance(exc, ConfigurationError):
        return one_line(str(exc)), USAGE
    if isinstance(exc, PgmbusError):
        return one_line(str(exc)), RUNTIME
    if isinstance(exc, psycopg.OperationalError) and getattr(exc, "sqlstate", None) is None:
        return "cannot connect to the database: " + one_line(str(exc)), RUNTIME
    if isinstance(exc, psycopg.Error):
        return one_line(str(translate(exc))), RUNTIME
    if isinstance(exc, psycopg_pool.PoolTimeout):
        return "the database did not answer in time: " + one_line(str(exc)), RUNTIME
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc}", USAGE
    if isinstance(exc, OSError):
        return one_line(str(exc)), RUNTIME
    raise exc


def fail(exc: BaseException) -> NoReturn:
    """Print ``error: <message>`` on stderr and exit with the error's status."""
    message, status = describe(exc)
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    raise SystemExit(status) from None


class OneLineErrors(TyperGroup):
    """The root command: every error of every subcommand ends as one line (see ``describe``)."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command, turning errors into one line and an exit status."""
        try:
            rv = super().main(
                args=args,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
        except (typer.Abort, KeyboardInterrupt):
            sys.stderr.write("interrupted\n")
            raise SystemExit(INTERRUPTED) from None
        except Exception as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":
                # a group called without a command: its help (typer's rich help prints itself)
                text = str(getattr(exc, "format_message", str)())
                if text.strip():
                    sys.stderr.write(text + "\n")
                raise SystemExit(USAGE) from None
            fail(exc)
        # Without standalone mode click returns the status of a ``typer.Exit`` (commands
        # themselves return None).
        if standalone_mode:
            raise SystemExit(rv if isinstance(rv, int) else 0)
        return rv
