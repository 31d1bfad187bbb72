"""``pgmbus streams ...`` (the event log, groups, capture, repair) and ``pgmbus maintain``."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Annotated, Any

import typer

from pgmbus import streams
from pgmbus.cli.common import (
    DsnOption,
    JsonOption,
    connect,
    console,
    json_object,
    json_value,
    make_table,
    print_json,
    reports_errors,
    require_group,
    vocabulary_rows,
)
from pgmbus.cli.confirm import YesOption, confirm_loss
from pgmbus.data.streams import log_consistent
from pgmbus.streams.metrics import metrics_text

app = typer.Typer(
    name="streams",
    help="The stream log: publish, consumer groups, subscriptions, change capture, repair.",
    no_args_is_help=True,
)

GroupArg = Annotated[str, typer.Argument(help="Consumer group name.")]


@app.command("publish")
@reports_errors
def publish_cmd(
    topic: Annotated[str, typer.Argument(help="Topic of the event.")],
    payload: Annotated[str, typer.Argument(help="The payload, as JSON.")],
    key: Annotated[str | None, typer.Option(help="Partitioning key.")] = None,
    headers: Annotated[str | None, typer.Option(help="Headers, as a JSON object.")] = None,
    subscription_id: Annotated[
        int | None, typer.Option(help="Send the event to this one subscription only.")
    ] = None,
    delayed_until: Annotated[
        str | None,
        typer.Option(help="Readers see the event from this ISO time on (with a time zone)."),
    ] = None,
    idempotency_key: Annotated[
        str | None,
        typer.Option(help="Publish once per key and topic (a retry prints the first id)."),
    ] = None,
    dsn: DsnOption = None,
) -> None:
    """Publish one event; prints its id (with --idempotency-key, a retry's id is the first's)."""
    when = _aware_time(delayed_until, "--delayed-until") if delayed_until else None
    duplicate = False
    with connect(dsn) as conn:
        hdrs = json_object(headers, "--headers") if headers else None
        body = json_value(payload, "PAYLOAD")
        if idempotency_key is None:
            eid = streams.publish(
                conn,
                topic,
                body,
                key=key,
                headers=hdrs,
                subscription_id=subscription_id,
                delayed_until=when,
            )
        else:
            once = streams.publish_once(
                conn,
                topic,
                [body],
                idempotency_key=idempotency_key,
                keys=[key],
                headers=[hdrs],
                subscription_id=subscription_id,
                delayed_until=when,
            )
            eid, duplicate = once.ids[0], once.duplicate
    if duplicate:
        typer.echo("already published with this idempotency key: nothing stored", err=True)
    typer.echo(eid)


def _aware_time(text: str, option: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not an ISO time", param_hint=option) from None
    if value.tzinfo is None:
        raise typer.BadParameter(f"{text!r} has no time zone (add Z or +hh:mm)", param_hint=option)
    return value


@app.command("create-group")
@reports_errors
def create_group_cmd(
    group: GroupArg,
    start: Annotated[
        str, typer.Option(help="'beginning', 'now', a timestamp or an event id.")
    ] = "now",
    slots: Annotated[int, typer.Option(help="Split the group by key hash into slots.")] = 1,
    topics: Annotated[
        list[str] | None, typer.Option("--topic", help="Deliver only this topic (repeatable).")
    ] = None,
    max_lag: Annotated[
        int | None, typer.Option(help="Expire the group when it lags this many seconds.")
    ] = None,
    dsn: DsnOption = None,
) -> None:
    """Create a consumer group."""
    with connect(dsn) as conn, conn.transaction():
        streams.create_group(conn, group, start=start, slots=slots)
        if topics or max_lag:
            streams.configure_group(
                conn,
                group,
                topics=topics,
                max_lag=timedelta(seconds=max_lag) if max_lag else None,
            )
    console.print(f"created group [bold]{group}[/] at {start} ({slots} slot(s))")


@app.command("drop-group")
@reports_errors
def drop_group_cmd(group: GroupArg, yes: YesOption = False, dsn: DsnOption = None) -> None:
    """Drop a consumer group with its cursors, retries and dead messages (asks first when it
    has dead messages; the events stay in the log)."""
    with connect(dsn) as conn:
        require_group(conn, group)
        dead = len(streams.dmq(conn, group))
        confirm_loss(f"dropping group {group}", dead, "dead messages", yes=yes)
        streams.drop_group(conn, group)
    console.print(f"dropped group [bold]{group}[/]")


@app.command("seek")
@reports_errors
def seek_cmd(
    group: GroupArg,
    start: Annotated[str, typer.Argument(help="'beginning', 'now', a timestamp or an event id.")],
    dsn: DsnOption = None,
) -> None:
    """Reposition a group (replay, skip ahead, or revive an expired group)."""
    with connect(dsn) as conn:
        streams.seek(conn, group, start)
    console.print(f"group [bold]{group}[/] now reads from {start}")


@app.command("groups")
@reports_errors
def groups_cmd(dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """List groups with state, position, pending events, retries and dead messages."""
    with connect(dsn) as conn:
        rows = streams.group_status(conn)
    if as_json:
        print_json(vocabulary_rows(rows))
        return
    table = make_table("group", "slot", "state", "pending", "oldest pending", "retries", "dmq")
    for r in rows:
        table.add_row(
            r["group_name"],
            str(r["slot"]),
            r["state"],
            str(r["pending_events"]),
            str(r["oldest_pending_at"] or "-"),
            str(r["retries"]),
            str(r["dead_letters"]),
        )
    console.print(table)


@app.command("read")
@reports_errors
def read_cmd(
    group: GroupArg,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="At most this many events.")
    ] = 100,
    old_limit: Annotated[
        int | None, typer.Option("--max", "--max-events", hidden=True, min=1)  # old spellings
    ] = None,
    slot: Annotated[int | None, typer.Option(help="Slot of a slotted group.")] = None,
    commit: Annotated[bool, typer.Option(help="Commit the batch after printing it.")] = False,
    dsn: DsnOption = None,
) -> None:
    """Print the group's next batch as JSON lines (and commit it with --commit)."""
    with connect(dsn) as conn, conn.transaction():
        batch = streams.read_next(conn, group, limit=old_limit or limit, slot=slot)
        for e in batch.events:
            typer.echo(
                json.dumps(
                    {
                        "id": e.id,
                        "topic": e.topic,
                        "key": e.key,
                        "payload": e.payload,
                        "headers": e.headers,
                        "published_at": e.published_at.isoformat(),
                    }
                )
            )
        if commit and batch.cursor:
            streams.commit(conn, group, batch.cursor)
    state = "committed" if commit else "not committed"
    err = typer.style(f"{len(batch)} event(s), {state}; cursor {batch.cursor}", dim=True)
    typer.echo(err, err=True)


@app.command("metrics")
@reports_errors
def metrics_cmd(dsn: DsnOption = None) -> None:
    """Print stream metrics in the Prometheus text format."""
    with connect(dsn) as conn:
        typer.echo(metrics_text(conn), nl=False)


@app.command("dmq")
@reports_errors
def dead_letters_cmd(group: GroupArg, dsn: DsnOption = None) -> None:
    """Print the group's dead messages (events that used up their attempts) as JSON."""
    with connect(dsn) as conn:
        require_group(conn, group)
        print_json(streams.dmq(conn, group))


@app.command("dmq-replay")
@reports_errors
def replay_dead_letter_cmd(
    group: GroupArg,
    event_id: Annotated[int, typer.Argument(help="The dead event's id.")],
    dsn: DsnOption = None,
) -> None:
    """Give a dead event a fresh set of attempts (it leaves the group's dmq)."""
    with connect(dsn) as conn:
        streams.dmq_replay(conn, group, event_id)
    console.print(f"event {event_id} is back on group {group}'s retry path")


@app.command("capture")
@reports_errors
def capture_cmd(
    table: Annotated[str, typer.Argument(help="Table to capture (schema-qualified or not).")],
    topic: Annotated[str | None, typer.Option(help="Topic (default: the table name).")] = None,
    columns: Annotated[
        list[str] | None, typer.Option("--column", help="Capture only these columns.")
    ] = None,
    dsn: DsnOption = None,
) -> None:
    """Publish the table's inserts, updates, deletes and truncates as events."""
    with connect(dsn) as conn:
        streams.capture_table(conn, table, topic=topic, columns=columns)
    console.print(f"capturing [bold]{table}[/]")


@app.command("stop-capture")
@reports_errors
def stop_capture_cmd(
    table: Annotated[str, typer.Argument(help="A captured table.")], dsn: DsnOption = None
) -> None:
    """Stop capturing a table."""
    with connect(dsn) as conn:
        streams.stop_capture(conn, table)
    console.print(f"stopped capturing [bold]{table}[/]")


@app.command("repair-after-restore")
@reports_errors
def repair_cmd(dsn: DsnOption = None) -> None:
    """Make a log restored from pg_dump into another cluster consistent again.

    Every group's unread events are queued on its retry path, the stored transaction ids are
    reset and the cursors are moved to this cluster's current snapshot.
    """
    with connect(dsn) as conn:
        if log_consistent(conn):
            console.print("the log is consistent with this cluster; repairing anyway")
        counts = streams.repair_after_restore(conn)
    for group, n in counts.items():
        console.print(f"group [bold]{group}[/]: {n} unread event(s) queued for redelivery")
    console.print("the stream log is consistent with this cluster")


@reports_errors
def maintain_cmd(dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """Periodic maintenance: partitions, retention, lagging groups, subscriptions, temp queues."""
    with connect(dsn) as conn:
        report: dict[str, Any] = streams.maintain(conn)
    if as_json:
        print_json(report)
        if report.get("errors"):
            raise typer.Exit(1)
        return
    console.print(f"partitions created: {', '.join(report['created']) or 'none'}")
    console.print(f"partitions dropped: {', '.join(report['dropped']) or 'none'}")
    for kept in report["kept"]:
        console.print(
            f"[yellow]kept[/] {kept['partition']} past retention: unread by "
            f"{', '.join(kept['groups'])}"
        )
    for group in report["expired_groups"]:
        console.print(f"[bold red]expired group {group}[/]: it lagged past its max_lag")
    console.print(f"subscriptions expired: {report['expired_subscriptions']}")
    for part, why in report.get("errors", {}).items():
        console.print(f"[bold red]failed[/] {part}: {why} (the other parts were done)")
    if report.get("errors"):
        raise typer.Exit(1)


def register(root: typer.Typer) -> None:
    """Add ``pgmbus streams ...`` and the top-level ``pgmbus maintain``."""
    app.command("dead-letters", hidden=True)(dead_letters_cmd)  # old spelling of `dmq`
    app.command("replay-dead-letter", hidden=True)(replay_dead_letter_cmd)  # of `dmq-replay`
    root.add_typer(app, name="streams")
    root.command("maintain")(maintain_cmd)
