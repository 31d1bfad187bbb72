"""The ``pgmbus`` command line: one typer application, one module per command group."""

from __future__ import annotations

import typer

from pgmbus.cli import dev, queues, sagas, schema_cmds, timers
from pgmbus.cli import exchange as exchange_cli
from pgmbus.cli import ops as ops_cli
from pgmbus.cli import spark as spark_cli
from pgmbus.cli import streams as streams_cli

app = typer.Typer(
    name="pgmbus",
    help="pgmbus: a message bus inside PostgreSQL (queues, streams, timers).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(dev.app, name="dev")
schema_cmds.register(app)
queues.register(app)
sagas.register(app)
streams_cli.register(app)
timers.register(app)
spark_cli.register(app)
ops_cli.register(app)
exchange_cli.register(app)


def main() -> None:
    """Entry point of the ``pgmbus`` console script."""
    app()
