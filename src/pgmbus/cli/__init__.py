"""The ``pgmbus`` command line: one typer application, one module per command group."""

from __future__ import annotations

from typing import Annotated

import typer

from pgmbus import __version__
from pgmbus.cli import dev, queues, sagas, schema_cmds, timers, top
from pgmbus.cli import exchange as exchange_cli
from pgmbus.cli import ops as ops_cli
from pgmbus.cli import placement as placement_cli
from pgmbus.cli import spark as spark_cli
from pgmbus.cli import streams as streams_cli
from pgmbus.cli import worker as worker_cli
from pgmbus.cli.errors import OneLineErrors

app = typer.Typer(
    name="pgmbus",
    cls=OneLineErrors,
    help="pgmbus: a message bus inside PostgreSQL (queues, streams, timers). "
    "Vocabulary and the DSN rule: docs/cli.md.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        # the schema version this package installs (`pgmbus status` shows the database's)
        from pgmbus.schema import migrations

        latest = max((m.version for m in migrations()), default=0)
        typer.echo(f"pgmbus {__version__} (schema version {latest})")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """pgmbus: a message bus inside PostgreSQL (queues, streams, timers)."""


app.add_typer(dev.app, name="dev")
schema_cmds.register(app)
queues.register(app)
worker_cli.register(app)
sagas.register(app)
streams_cli.register(app)
timers.register(app)
spark_cli.register(app)
ops_cli.register(app)
top.register(app)
exchange_cli.register(app)
placement_cli.register(app)


def main() -> None:
    """Entry point of the ``pgmbus`` console script."""
    app()
