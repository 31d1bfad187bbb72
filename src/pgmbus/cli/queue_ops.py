"""Queue operations: pause, resume, purge (asks first), counters, ``dmq delete`` (asks first)."""

from __future__ import annotations

from typing import Annotated

import typer

from pgmbus.cli.common import (
    DsnOption,
    JsonOption,
    console,
    make_table,
    open_bus,
    print_json,
    reports_errors,
    require_queue,
    vocabulary_rows,
)
from pgmbus.cli.confirm import YesOption, confirm_loss
from pgmbus.queues import Bus

OneConsumer = Annotated[
    str | None, typer.Option("--consumer", "-c", help="Only this consumer (default: the queue).")
]


def _require(bus: Bus, queue: str) -> None:
    with bus.pool.connection() as conn:
        require_queue(conn, queue)


def _what(name: str, consumer: str | None) -> str:
    return f"queue {name}" if consumer is None else f"consumer {consumer} of queue {name}"


@reports_errors
def pause_cmd(name: str, consumer: OneConsumer = None, dsn: DsnOption = None) -> None:
    """Pause a queue or one consumer: nothing is claimed from it until resumed; posts go on."""
    with open_bus(dsn) as bus:
        changed = bus.pause(name, consumer)
    console.print(f"{_what(name, consumer)} paused" + ("" if changed else " (it was already)"))


@reports_errors
def resume_cmd(name: str, consumer: OneConsumer = None, dsn: DsnOption = None) -> None:
    """Resume a paused queue or consumer (waiting consumers are woken)."""
    with open_bus(dsn) as bus:
        changed = bus.resume(name, consumer)
    console.print(f"{_what(name, consumer)} resumed" + ("" if changed else " (it was not paused)"))


@reports_errors
def purge_cmd(
    name: str,
    consumer: OneConsumer = None,
    yes: YesOption = False,
    confirm: Annotated[
        str | None,
        typer.Option(
            "--confirm",
            hidden=True,
            help="Older form of --yes: the queue's name again (kept until the next minor release).",
        ),
    ] = None,
    dsn: DsnOption = None,
) -> None:
    """Delete every pending message of a queue or consumer (leased ones stay); asks first when
    some are pending."""
    with open_bus(dsn) as bus:
        _require(bus, name)  # an unknown queue fails here, before the question
        if confirm is not None and confirm != name:
            raise typer.BadParameter(
                f"{confirm!r} is not the queue's name: nothing purged", param_hint="--confirm"
            )
        rows = [r for r in bus.stats(name) if consumer is None or r.cname == consumer]
        pending = sum(r.ready + r.delayed for r in rows)
        confirm_loss(
            f"purging {_what(name, consumer)}",
            pending,
            "pending deliveries",
            yes=yes or confirm == name,
        )
        n = bus.purge(name, consumer)
    console.print(f"purged {n} deliveries of {_what(name, consumer)}")


@reports_errors
def counters_cmd(
    name: Annotated[str | None, typer.Argument()] = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Posted and consumed totals per queue and consumer (counters: rolled-back posts count)."""
    with open_bus(dsn) as bus:
        if name is not None:
            _require(bus, name)
        rows = bus.counters(name)
    if as_json:
        print_json(vocabulary_rows([r.__dict__ for r in rows]))
        return
    table = make_table("queue", "consumer", "posted", "consumed")
    for r in rows:
        table.add_row(r.qname, r.cname or "(queue)", str(r.posted), str(r.consumed))
    console.print(table)


@reports_errors
def dmq_delete_cmd(
    ids: Annotated[list[int], typer.Argument(help="dmq ids to delete.")],
    yes: YesOption = False,
    dsn: DsnOption = None,
) -> None:
    """Delete dead messages for good (each in its own transaction; an unknown id stops); asks
    first."""
    with open_bus(dsn) as bus:
        confirm_loss("deleting from the dmq", len(set(ids)), "dead messages", yes=yes)
        for dmq_id in ids:
            typer.echo(f"{dmq_id} deleted (queue {bus.dmq_delete(dmq_id)})")


def register(queue_app: typer.Typer, dmq_app: typer.Typer) -> None:
    """Add the commands to ``pgmbus queue`` and ``pgmbus dmq``."""
    queue_app.command("pause")(pause_cmd)
    queue_app.command("resume")(resume_cmd)
    queue_app.command("purge")(purge_cmd)
    queue_app.command("counters")(counters_cmd)
    dmq_app.command("delete")(dmq_delete_cmd)
