"""Part two of the queue commands: waiting messages, views, request, temporary queues, sagas."""

from __future__ import annotations

import json
import signal
import threading
from typing import Annotated, Any

import psycopg
import typer
from psycopg.rows import dict_row
from rich.table import Table

from pgmbus.cli.common import DsnOption, JsonOption, console, print_json, reports_errors
from pgmbus.dsn import resolve_dsn
from pgmbus.errors import InvalidPayload, translating
from pgmbus.queues import Bus
from pgmbus.queues.saga import run_saga_pump, run_saga_worker
from pgmbus.queues.worker import load_handler
from pgmbus.sqlfiles import load_queries

Q = load_queries("queues.sql")
saga_app = typer.Typer(help="Sagas: list, run step workers, pump.", no_args_is_help=True)


def _rows(dsn: str | None, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    with (
        psycopg.connect(resolve_dsn(dsn), autocommit=True, row_factory=dict_row) as conn,
        translating(),
    ):
        cur = conn.execute(Q[name].encode(), params)
        return cur.fetchall() if cur.description is not None else []


@reports_errors
def waiting_cmd(
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Messages waiting for their consume_after dependencies, and what they wait for."""
    rows = _rows(dsn, "waiting_list", {"limit": limit})
    if as_json:
        print_json([r | {"since": r["since"].isoformat()} for r in rows])
        return
    table = Table("queue", "iid", "pending", "waits for")
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
    rows = _rows(dsn, "create_view", {"queue": name, "view": view})
    typer.echo(rows[0]["create_view"])


@reports_errors
def request_cmd(
    name: str,
    data: Annotated[str, typer.Argument(help="The request, a JSON object.")],
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the reply.")] = 10.0,
    dsn: DsnOption = None,
) -> None:
    """Send a request and print the reply's data (request-response over a temporary queue)."""
    payload = json.loads(data)
    if not isinstance(payload, dict):
        raise InvalidPayload("data must be a JSON object", sqlstate="MB005")
    with Bus(resolve_dsn(dsn), max_size=2) as bus:
        reply = bus.request(name, payload, timeout=timeout)
    print_json(reply.data)


@reports_errors
def clear_temp_cmd(dsn: DsnOption = None) -> None:
    """Drop temporary queues and consumers whose session has ended."""
    with Bus(resolve_dsn(dsn), max_size=1) as bus:
        typer.echo(f"{bus.clear_tempq()} temporary object(s) dropped")


@saga_app.command("list")
@reports_errors
def saga_list_cmd(
    state: Annotated[str | None, typer.Option(help="running, completed, ...")] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 50,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Sagas with their state and each step's forward and compensation state."""
    rows = _rows(dsn, "saga_list", {"state": state, "limit": limit})
    if as_json:
        print_json(rows)
        return
    table = Table("saga", "name", "state", "steps", "reason")
    for r in rows:
        steps = ", ".join(
            f"{k}:{v['forward']}" + (f"/{v['compensation']}" if v["compensation"] else "")
            for k, v in (r["steps"] or {}).items()
        )
        table.add_row(str(r["saga_id"]), r["name"], r["state"], steps, r["reason"] or "")
    console.print(table)


def _until_signalled() -> threading.Event:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return stop


@saga_app.command("worker")
@reports_errors
def saga_worker_cmd(
    handler: Annotated[str, typer.Argument(help="module:function called with (conn, message).")],
    queue: Annotated[str, typer.Option("--queue", "-q", help="Queue to consume.")],
    poll: Annotated[float, typer.Option(help="Idle poll interval, seconds.")] = 0.2,
    dsn: DsnOption = None,
) -> None:
    """Handle a saga step's queue, one transaction per message, until SIGTERM/SIGINT.

    A forward handler that raises rolls the saga back in the same transaction."""
    func: Any = load_handler(handler)
    console.print(f"saga worker: {handler} on {queue}", highlight=False)
    run_saga_worker(resolve_dsn(dsn), queue, func, _until_signalled(), poll_interval=poll)


@saga_app.command("pump")
@reports_errors
def saga_pump_cmd(
    poll: Annotated[float, typer.Option(help="Idle poll interval, seconds.")] = 0.2,
    dsn: DsnOption = None,
) -> None:
    """Complete sagas and record finished rollbacks (final and done messages) until SIGTERM."""
    console.print("saga pump", highlight=False)
    run_saga_pump(resolve_dsn(dsn), _until_signalled(), poll_interval=poll)


def register(queue_app: typer.Typer, app: typer.Typer) -> None:
    """Add these commands to ``pgmbus queue`` and ``pgmbus saga``."""
    queue_app.command("waiting")(waiting_cmd)
    queue_app.command("view")(view_cmd)
    queue_app.command("request")(request_cmd)
    queue_app.command("clear-temp")(clear_temp_cmd)
    app.add_typer(saga_app, name="saga")
