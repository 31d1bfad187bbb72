"""``pgmbus queue ...``, ``pgmbus dmq ...`` and ``pgmbus worker``: queues from the shell."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer
from rich.table import Table

from pgmbus.cli import queue_workflow
from pgmbus.cli.common import DsnOption, JsonOption, console, print_json, reports_errors
from pgmbus.dsn import resolve_dsn
from pgmbus.errors import InvalidPayload
from pgmbus.queues import Bus, Message
from pgmbus.queues.worker import WorkerConfig, load_handler, serve

queue_app = typer.Typer(
    help="Queues: create, drop, list, stats, rotate, post, consume, peek.", no_args_is_help=True
)
dmq_app = typer.Typer(help="The dead-message queue: list and replay.", no_args_is_help=True)

ConsumerOption = Annotated[str, typer.Option("--consumer", "-c", help="Consumer name.")]


def _bus(dsn: str | None) -> Bus:
    return Bus(resolve_dsn(dsn), max_size=2).open()


def _object(text: str | None, what: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidPayload(f"{what} is not valid JSON: {exc}", sqlstate="MB005") from exc
    if not isinstance(value, dict):
        raise InvalidPayload(f"{what} must be a JSON object", sqlstate="MB005")
    return value


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
    bus = _bus(dsn)
    try:
        bus.create_queue(name, ncons)
    finally:
        bus.close()
    console.print(f"queue [bold]{name}[/] ready")


@queue_app.command("drop")
@reports_errors
def drop_cmd(name: str, dsn: DsnOption = None) -> None:
    """Drop a queue with its consumers and pending messages."""
    bus = _bus(dsn)
    try:
        bus.drop_queue(name)
    finally:
        bus.close()
    console.print(f"queue [bold]{name}[/] dropped")


@queue_app.command("consumer")
@reports_errors
def consumer_cmd(
    name: str,
    consumer: str,
    selector: Annotated[str | None, typer.Option(help="Static SQL expression over t.")] = None,
    drop: Annotated[bool, typer.Option("--drop", help="Drop the consumer instead.")] = False,
    dsn: DsnOption = None,
) -> None:
    """Create (or with --drop, drop) a durable consumer of a queue."""
    bus = _bus(dsn)
    try:
        if drop:
            bus.drop_consumer(name, consumer)
        else:
            bus.create_consumer(name, consumer, selector)
    finally:
        bus.close()
    console.print(f"consumer [bold]{consumer}[/] of {name} {'dropped' if drop else 'ready'}")


@queue_app.command("list")
@reports_errors
def list_cmd(dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """List queues with their consumers and triggers."""
    bus = _bus(dsn)
    try:
        queues = bus.queues()
    finally:
        bus.close()
    if as_json:
        print_json([q.__dict__ for q in queues])
        return
    table = Table("queue", "consumers", "triggers to", "created")
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
    """Depth, ready, delayed, leased, expired, oldest age, dead messages, selector errors."""
    bus = _bus(dsn)
    try:
        rows = bus.stats(name)
    finally:
        bus.close()
    if as_json:
        print_json(
            [
                r.__dict__
                | {"oldest_age": None if r.oldest_age is None else r.oldest_age.total_seconds()}
                for r in rows
            ]
        )
        return
    table = Table(
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
            r.cname,
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
    bus = _bus(dsn)
    try:
        while True:
            names = [name] if name else [q.qname for q in bus.queues()]
            print(json.dumps({q: bus.rotate(q) for q in names}), flush=True)
            if every is None:
                return
            time.sleep(every)
    except KeyboardInterrupt:
        return
    finally:
        bus.close()


@queue_app.command("post")
@reports_errors
def post_cmd(
    name: str,
    data: Annotated[str, typer.Argument(help="The payload, a JSON object.")],
    properties: Annotated[str | None, typer.Option(help="JSON object.")] = None,
    delay: Annotated[float | None, typer.Option(help="Deliver after this many seconds.")] = None,
    ttl: Annotated[float | None, typer.Option(help="Expire after this many seconds.")] = None,
    dsn: DsnOption = None,
) -> None:
    """Post one message; prints its iid."""
    payload = _object(data, "data") or {}
    now = datetime.now(UTC)
    bus = _bus(dsn)
    try:
        iid = bus.post(
            name,
            payload,
            properties=_object(properties, "properties"),
            delayed_until=None if delay is None else now + timedelta(seconds=delay),
            expires=None if ttl is None else now + timedelta(seconds=ttl),
        )
    finally:
        bus.close()
    typer.echo(iid)


@queue_app.command("consume")
@reports_errors
def consume_cmd(
    name: str,
    consumer: ConsumerOption = "default",
    amount: Annotated[int, typer.Option("--amount", "-n", help="At most this many.")] = 1,
    wait: Annotated[float, typer.Option(help="Seconds to wait for a message.")] = 0.0,
    dsn: DsnOption = None,
) -> None:
    """Consume (remove) messages and print them as JSON lines."""
    bus = _bus(dsn)
    try:
        messages = bus.consume(name, consumer, amount=amount, timeout=wait)
    finally:
        bus.close()
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
    bus = _bus(dsn)
    try:
        found = bus.peek(name, iid)
    finally:
        bus.close()
    typer.echo("yes" if found else "no")
    if not found:
        raise typer.Exit(1)


@dmq_app.command("list")
@reports_errors
def dmq_list_cmd(
    queue: Annotated[str | None, typer.Option(help="Only this queue's.")] = None,
    limit: int = 100,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """List dead messages, oldest first."""
    bus = _bus(dsn)
    try:
        rows = bus.dmq(queue, limit=limit)
    finally:
        bus.close()
    if as_json:
        print_json([r.__dict__ for r in rows])
        return
    table = Table("dmq id", "queue", "consumer", "iid", "attempts", "reason", "died")
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
    bus = _bus(dsn)
    try:
        for dmq_id in ids:
            typer.echo(f"{dmq_id} -> {bus.dmq_replay(dmq_id, queue=queue)}")
    finally:
        bus.close()


@reports_errors
def worker_cmd(
    handler: Annotated[str, typer.Argument(help="module:function called with each Message.")],
    queue: Annotated[str, typer.Option("--queue", "-q", help="Queue to consume.")],
    consumer: ConsumerOption = "default",
    concurrency: Annotated[int, typer.Option(help="Messages handled at once.")] = 1,
    lease: Annotated[float, typer.Option(help="Lease (visibility timeout), seconds.")] = 60.0,
    max_attempts: Annotated[int, typer.Option(help="Deliveries before the dmq.")] = 5,
    backoff: Annotated[float, typer.Option(help="First retry delay, seconds (doubles).")] = 1.0,
    poll: Annotated[float, typer.Option(help="Idle poll interval, seconds.")] = 1.0,
    dsn: DsnOption = None,
) -> None:
    """Run a worker: handle messages until SIGTERM/SIGINT, then finish those in hand and exit."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    config = WorkerConfig(
        queue=queue,
        consumer=consumer,
        concurrency=concurrency,
        lease=lease,
        max_attempts=max_attempts,
        backoff_base=backoff,
        poll_interval=poll,
    )
    func = load_handler(handler)
    console.print(f"worker: {handler} on {queue}/{consumer} x{concurrency}", highlight=False)
    stats = asyncio.run(serve(resolve_dsn(dsn), func, config))
    console.print(
        f"worker stopped: {stats.done} done, {stats.retried} retried, {stats.dead} dead, "
        f"{stats.lost} lost",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    """Add the queue, dmq and worker commands to the ``pgmbus`` application."""
    app.add_typer(queue_app, name="queue")
    app.add_typer(dmq_app, name="dmq")
    app.command("worker")(worker_cmd)
    queue_workflow.register(queue_app)
