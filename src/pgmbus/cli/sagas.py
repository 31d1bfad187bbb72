"""``pgmbus saga ...``: list sagas, run the workers of their steps, run the saga pump."""

from __future__ import annotations

import signal
import threading
from typing import Annotated, Any

import typer

from pgmbus.cli.common import (
    DsnOption,
    JsonOption,
    connect,
    console,
    database,
    handler_spec,
    make_table,
    print_json,
    reports_errors,
)
from pgmbus.cli.worker_checks import require_worker_objects
from pgmbus.data.queues import saga_list
from pgmbus.queues.saga import run_saga_pump, run_saga_worker
from pgmbus.queues.worker import load_handler

saga_app = typer.Typer(help="Sagas: list, run step workers, pump.", no_args_is_help=True)


SAGA_STATES = ("running", "completed", "compensating", "compensated")


def _saga_state(text: str) -> str:
    if text not in SAGA_STATES:
        raise typer.BadParameter(f"{text!r} is not one of {', '.join(SAGA_STATES)}")
    return text


@saga_app.command("list")
@reports_errors
def saga_list_cmd(
    state: Annotated[
        str | None,
        typer.Option(parser=_saga_state, help="running, completed, compensating, compensated."),
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 50,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Sagas with their state and each step's forward and compensation state."""
    with connect(dsn) as conn:
        rows = saga_list(conn, state, limit)
    if as_json:
        print_json(rows)
        return
    table = make_table("saga", "name", "state", "steps", "reason")
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
    handler: Annotated[
        str,
        typer.Argument(parser=handler_spec, help="module:function called with (conn, message)."),
    ],
    queue: Annotated[str, typer.Option("--queue", "-q", help="Queue to consume.")],
    poll: Annotated[float, typer.Option(help="Idle poll interval, seconds.")] = 0.2,
    dsn: DsnOption = None,
) -> None:
    """Handle a saga step's queue, one transaction per message, until SIGTERM/SIGINT.

    A forward handler that raises rolls the saga back in the same transaction."""
    func: Any = load_handler(handler)
    checked = database(dsn)
    # the loop retries whatever fails, so a missing queue would only ever be polled in silence
    require_worker_objects(checked, [(queue, "default")])
    console.print(f"saga worker: {handler} on {queue}", highlight=False)
    run_saga_worker(checked, queue, func, _until_signalled(), poll_interval=poll)


@saga_app.command("pump")
@reports_errors
def saga_pump_cmd(
    poll: Annotated[float, typer.Option(help="Idle poll interval, seconds.")] = 0.2,
    dsn: DsnOption = None,
) -> None:
    """Complete sagas and record finished rollbacks (final and done messages) until SIGTERM."""
    console.print("saga pump", highlight=False)
    run_saga_pump(database(dsn), _until_signalled(), poll_interval=poll)


def register(app: typer.Typer) -> None:
    """Add ``pgmbus saga`` to the application."""
    app.add_typer(saga_app, name="saga")
