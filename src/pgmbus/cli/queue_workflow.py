"""Queue workflow commands: ``waiting`` (dependencies), ``view``, ``request``, ``clear-temp``."""

from __future__ import annotations

from typing import Annotated

import typer

from pgmbus.cli.common import (
    DsnOption,
    JsonOption,
    connect,
    console,
    json_object,
    make_table,
    open_bus,
    print_json,
    reports_errors,
    require_queue,
    vocabulary_rows,
)
from pgmbus.data.queues import create_view, waiting_list


@reports_errors
def waiting_cmd(
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Messages waiting for their consume_after dependencies, and what they wait for."""
    with connect(dsn) as conn:
        rows = waiting_list(conn, limit)
    if as_json:
        print_json(vocabulary_rows([r | {"since": r["since"].isoformat()} for r in rows]))
        return
    table = make_table("queue", "iid", "pending", "waits for")
    for r in rows:
        table.add_row(r["qname"], r["iid"], str(r["pending"]), ", ".join(r["waits_for"]))
    console.print(table)


@reports_errors
def view_cmd(
    name: str,
    view: Annotated[str | None, typer.Option(help="schema.name (default public.<q>_q).")] = None,
    dsn: DsnOption = None,
) -> None:
    """Create a view whose INSERT posts to the queue (grant it to unprivileged roles)."""
    with connect(dsn) as conn:
        typer.echo(create_view(conn, name, view))


@reports_errors
def request_cmd(
    name: str,
    data: Annotated[str, typer.Argument(help="The request, a JSON object.")],
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the reply.")] = 10.0,
    dsn: DsnOption = None,
) -> None:
    """Send a request and print the reply's data (request-response over a temporary queue)."""
    payload = json_object(data, "DATA")
    with open_bus(dsn) as bus:
        with bus.pool.connection() as conn:
            require_queue(conn, name)
        reply = bus.request(name, payload, timeout=timeout)
    print_json(reply.data)


@reports_errors
def clear_temp_cmd(dsn: DsnOption = None) -> None:
    """Drop temporary queues and consumers whose session has ended."""
    with open_bus(dsn) as bus:
        typer.echo(f"{bus.clear_tempq()} temporary object(s) dropped")


def register(queue_app: typer.Typer) -> None:
    """Add these commands to ``pgmbus queue``."""
    queue_app.command("waiting")(waiting_cmd)
    queue_app.command("view")(view_cmd)
    queue_app.command("request")(request_cmd)
    queue_app.command("clear-temp")(clear_temp_cmd)
