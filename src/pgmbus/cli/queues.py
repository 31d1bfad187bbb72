"""``pgmbus queue ...``, ``pgmbus dmq ...`` and ``pgmbus worker``: queues from the shell."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer

from pgmbus.cli import queue_ops, queue_workflow
from pgmbus.cli.common import (
    DsnOption,
    JsonOption,
    console,
    json_object,
    make_table,
    open_bus,
    print_json,
    reports_errors,
    require_queue,
    timestamp,
    vocabulary_rows,
)
from pgmbus.cli.confirm import YesOption, confirm_loss
from pgmbus.queues import Bus, Message

queue_app = typer.Typer(
    help="Queues: create, drop, create-consumer, drop-consumer, list, stats, counters, rotate, "
    "post, consume, peek, pause, resume, purge.",
    no_args_is_help=True,
)
dmq_app = typer.Typer(
    help="The dead-message queue (dmq): list dead messages, replay or delete them.",
    no_args_is_help=True,
)

ConsumerOption = Annotated[str, typer.Option("--consumer", "-c", help="Consumer name.")]


def _require(bus: Bus, queue: str) -> None:
    with bus.pool.connection() as conn:
        require_queue(conn, queue)


def _object(text: str | None, what: str) -> dict[str, Any] | None:
    """Parse a JSON object given on the command line; a usage error (exit 2) when it is not."""
    return None if text is None else json_object(text, what)


def _message_dict(m: Message) -> dict[str, Any]:
    return {
        "iid": m.iid,
        "id": m.id,
        "added": m.added.isoformat(),
        "data": m.data,
        "properties": m.properties,
        "headers": m.headers,
        "attempts": m.attempts,
    }


@queue_app.command("create")
@reports_errors
def create_cmd(
    name: str,
    ncons: Annotated[
        int, typer.Option(help="Kept for the original mbus API's signature; unused.")
    ] = 1,
    dsn: DsnOption = None,
) -> None:
    """Create a queue (or regenerate the functions of an existing one)."""
    with open_bus(dsn) as bus:
        bus.create_queue(name, ncons)
    console.print(f"queue [bold]{name}[/] ready")


@queue_app.command("drop")
@reports_errors
def drop_cmd(name: str, yes: YesOption = False, dsn: DsnOption = None) -> None:
    """Drop a queue with its consumers and pending messages; asks first when some are pending."""
    with open_bus(dsn) as bus:
        _require(bus, name)  # an unknown queue fails here, before the question
        pending = sum(row.depth for row in bus.stats(name))
        confirm_loss(f"dropping queue {name}", pending, "pending deliveries", yes=yes)
        bus.drop_queue(name)
    console.print(f"queue [bold]{name}[/] dropped")


SelectorOption = Annotated[
    str | None, typer.Option(help="Static SQL expression over t (the message row).")
]


@queue_app.command("create-consumer")
@reports_errors
def create_consumer_cmd(
    name: str, consumer: str, selector: SelectorOption = None, dsn: DsnOption = None
) -> None:
    """Create a durable consumer of a queue (or change its selector)."""
    consumer_cmd(name, consumer, selector, drop=False, dsn=dsn)


@queue_app.command("drop-consumer")
@reports_errors
def drop_consumer_cmd(
    name: str, consumer: str, yes: YesOption = False, dsn: DsnOption = None
) -> None:
    """Drop a consumer of a queue with its pending deliveries; asks first when some are pending."""
    with open_bus(dsn) as bus:
        _require(bus, name)
        pending = sum(row.depth for row in bus.stats(name) if row.cname == consumer)
        what = f"dropping consumer {consumer} of queue {name}"
        confirm_loss(what, pending, "pending deliveries", yes=yes)
        bus.drop_consumer(name, consumer)
    console.print(f"consumer [bold]{consumer}[/] of [bold]{name}[/] dropped")


@queue_app.command("consumer", hidden=True)
@reports_errors
def consumer_cmd(
    name: str,
    consumer: str,
    selector: SelectorOption = None,
    drop: Annotated[bool, typer.Option("--drop", help="Drop the consumer instead.")] = False,
    yes: YesOption = False,
    dsn: DsnOption = None,
) -> None:
    """Old spelling of create-consumer / drop-consumer (with --drop)."""
    if drop:
        drop_consumer_cmd(name, consumer, yes=yes, dsn=dsn)
        return
    with open_bus(dsn) as bus:
        bus.create_consumer(name, consumer, selector)
    console.print(f"consumer [bold]{consumer}[/] of {name} ready")


@queue_app.command("list")
@reports_errors
def list_cmd(dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """List queues with their consumers and triggers."""
    with open_bus(dsn) as bus:
        queues = bus.queues()
    if as_json:
        print_json(vocabulary_rows([q.__dict__ for q in queues]))
        return
    table = make_table("queue", "consumers", "triggers to", "created")
    for q in queues:
        table.add_row(
            q.qname,
            ", ".join(q.consumers),
            ", ".join(q.triggers_to),
            q.created_at.isoformat(timespec="seconds"),
        )
    console.print(table)


@queue_app.command("stats")
@reports_errors
def stats_cmd(
    name: Annotated[str | None, typer.Argument()] = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Depth, ready, delayed, leased, expired, oldest age, dead messages, selector errors; a
    paused consumer is marked; --json adds the posted/consumed totals (see queue counters)."""
    with open_bus(dsn) as bus:
        if name is not None:
            _require(bus, name)
        rows = bus.stats(name)
    if as_json:
        print_json(
            vocabulary_rows(
                [
                    r.__dict__
                    | {"oldest_age": None if r.oldest_age is None else r.oldest_age.total_seconds()}
                    for r in rows
                ]
            )
        )
        return
    table = make_table(
        "queue",
        "consumer",
        "depth",
        "ready",
        "delayed",
        "leased",
        "expired",
        "oldest (s)",
        "dmq",
        "selector errors",
    )
    for r in rows:
        age = "" if r.oldest_age is None else f"{r.oldest_age.total_seconds():.1f}"
        table.add_row(
            r.qname,
            r.cname + (" (paused)" if r.paused else ""),
            str(r.depth),
            str(r.ready),
            str(r.delayed),
            str(r.leased),
            str(r.expired),
            age,
            str(r.dmq),
            str(r.selector_errors),
        )
    console.print(table)


@queue_app.command("rotate")
@reports_errors
def rotate_cmd(
    name: Annotated[str | None, typer.Argument(help="Queue (default: every queue).")] = None,
    every: Annotated[
        float | None, typer.Option("--every", help="Run again every S seconds until stopped.")
    ] = None,
    dsn: DsnOption = None,
) -> None:
    """Storage upkeep: truncate drained segments, start new ones (a JSON line per run).

    Bus consumers and the worker do this by themselves; run it for queues consumed from SQL.
    """
    with open_bus(dsn) as bus:
        if name is not None:
            _require(bus, name)
        try:
            while True:
                names = [name] if name else [q.qname for q in bus.queues()]
                print(json.dumps({q: bus.rotate(q) for q in names}), flush=True)
                if every is None:
                    return
                time.sleep(every)
        except KeyboardInterrupt:
            return


@queue_app.command("post")
@reports_errors
def post_cmd(
    name: str,
    data: Annotated[str, typer.Argument(help="The payload, a JSON object.")],
    properties: Annotated[str | None, typer.Option(help="JSON object.")] = None,
    delay: Annotated[float | None, typer.Option(help="Deliver after this many seconds.")] = None,
    at: Annotated[
        datetime | None,
        typer.Option(
            "--delayed-until",
            "--at",
            parser=timestamp,
            help="Deliver at this ISO 8601 time (UTC if no zone).",
        ),
    ] = None,
    ttl: Annotated[float | None, typer.Option(help="Expire after this many seconds.")] = None,
    dedupe_key: Annotated[
        str | None,
        typer.Option(help="At most one pending message per key: prints the pending one's iid."),
    ] = None,
    consume_after: Annotated[
        list[str] | None,
        typer.Option(help="An iid this message waits for (repeat the option for several)."),
    ] = None,
    priority: Annotated[
        int,
        typer.Option(help="0..32767: higher is claimed first, FIFO within one priority."),
    ] = 0,
    dsn: DsnOption = None,
) -> None:
    """Post one message; prints its iid."""
    payload = _object(data, "data") or {}
    now = datetime.now(UTC)
    if delay is not None and at is not None:
        raise typer.BadParameter(
            "give --delay or --delayed-until, not both", param_hint="--delayed-until"
        )
    with open_bus(dsn) as bus:
        _require(bus, name)
        iid = bus.post(
            name,
            payload,
            properties=_object(properties, "properties"),
            delayed_until=at if delay is None else now + timedelta(seconds=delay),
            expires=None if ttl is None else now + timedelta(seconds=ttl),
            dedupe_key=dedupe_key,
            consume_after=consume_after or None,
            priority=priority,
        )
    typer.echo(iid)


@queue_app.command("consume")
@reports_errors
def consume_cmd(
    name: str,
    consumer: ConsumerOption = "default",
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many.")] = 1,
    old_limit: Annotated[
        int | None, typer.Option("--max", "--amount", hidden=True, min=1)  # old spellings
    ] = None,
    wait: Annotated[float, typer.Option(help="Seconds to wait for a message.")] = 0.0,
    dsn: DsnOption = None,
) -> None:
    """Consume (remove) messages and print them as JSON lines."""
    with open_bus(dsn) as bus:
        messages = bus.consume(name, consumer, limit=old_limit or limit, wait=wait)
    for m in messages:
        typer.echo(json.dumps(_message_dict(m), default=str))
    if not messages:
        console.print("[dim]no message[/]", highlight=False)


@queue_app.command("peek")
@reports_errors
def peek_cmd(
    name: str, iid: Annotated[str | None, typer.Argument()] = None, dsn: DsnOption = None
) -> None:
    """Say whether the queue holds message IID (any message when omitted); exit 1 when not."""
    with open_bus(dsn) as bus:
        found = bus.peek(name, iid)
    typer.echo("yes" if found else "no")
    if not found:
        raise typer.Exit(1)


@dmq_app.command("list")
@reports_errors
def dmq_list_cmd(
    queue: Annotated[str | None, typer.Option(help="Only this queue's.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many.")] = 100,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """List dead messages, oldest first."""
    with open_bus(dsn) as bus:
        if queue is not None:
            _require(bus, queue)
        rows = bus.dmq(queue, limit=limit)
    if as_json:
        print_json(vocabulary_rows([r.__dict__ for r in rows]))
        return
    table = make_table("dmq id", "queue", "consumer", "iid", "attempts", "reason", "died")
    for r in rows:
        table.add_row(
            str(r.dmq_id),
            r.qname,
            r.cname or "",
            r.iid,
            str(r.attempts),
            r.reason,
            r.died_at.isoformat(timespec="seconds"),
        )
    console.print(table)


@dmq_app.command("replay")
@reports_errors
def dmq_replay_cmd(
    ids: Annotated[list[int], typer.Argument(help="dmq ids to replay.")],
    queue: Annotated[str | None, typer.Option(help="Post into this queue instead.")] = None,
    dsn: DsnOption = None,
) -> None:
    """Put dead messages back into their queue (their consumer), keeping their iids."""
    with open_bus(dsn) as bus:
        for dmq_id in ids:
            typer.echo(f"{dmq_id} -> {bus.dmq_replay(dmq_id, queue=queue)}")


def register(app: typer.Typer) -> None:
    """Add the queue, dmq and worker commands to the ``pgmbus`` application."""
    app.add_typer(queue_app, name="queue")
    app.add_typer(dmq_app, name="dmq")
    queue_workflow.register(queue_app)
    queue_ops.register(queue_app, dmq_app)
