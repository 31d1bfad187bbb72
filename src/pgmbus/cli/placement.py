"""``pgmbus placement ...``: the map of a bus over several servers (scale-out)."""

from __future__ import annotations

from typing import Annotated

import typer

from pgmbus.cli.common import DsnOption, console, database, make_table, reports_errors
from pgmbus.scaleout import Cluster, change_topic_servers, move_queue

app = typer.Typer(
    name="placement",
    help="Where the queues and topics of a bus over several servers live (docs/scale-out.md). "
    "--dsn is the home database holding the map.",
    no_args_is_help=True,
)

KindArg = Annotated[str, typer.Argument(help="'queue' or 'topic'.")]
NameArg = Annotated[str, typer.Argument(help="The queue's or topic's name.")]


@app.command("show")
@reports_errors
def show_cmd(dsn: DsnOption = None) -> None:
    """Print the servers and the placements of the map."""
    cluster = Cluster(database(dsn), refresh=0.0)
    servers = make_table("server", "conninfo")
    for name, conninfo in cluster.servers().items():
        servers.add_row(name, conninfo)
    console.print(servers)
    placed = make_table("kind", "name", "servers", "moving to", "changing from")
    for p in cluster.placements():
        placed.add_row(
            p.kind, p.name, ",".join(p.servers), p.moving_to or "", ",".join(p.previous or ())
        )
    console.print(placed)


@app.command("add-server")
@reports_errors
def add_server_cmd(
    name: Annotated[str, typer.Argument(help="The server's name in the map.")],
    conninfo: Annotated[str, typer.Argument(help="How to reach it (no password).")],
    dsn: DsnOption = None,
) -> None:
    """Add a server to the map."""
    Cluster(database(dsn), refresh=0.0).add_server(name, conninfo)
    console.print(f"server {name} added")


@app.command("drop-server")
@reports_errors
def drop_server_cmd(
    name: Annotated[str, typer.Argument(help="The server's name in the map.")],
    dsn: DsnOption = None,
) -> None:
    """Remove a server nothing is placed on."""
    Cluster(database(dsn), refresh=0.0).drop_server(name)
    console.print(f"server {name} dropped")


@app.command("place")
@reports_errors
def place_cmd(
    kind: KindArg,
    name: NameArg,
    servers: Annotated[list[str], typer.Argument(help="One server (queue) or several (topic).")],
    dsn: DsnOption = None,
) -> None:
    """Place a queue on a server, or a topic over servers by key hash."""
    Cluster(database(dsn), refresh=0.0).place(kind, name, servers)
    console.print(f"{kind} {name} placed on {','.join(servers)}")


@app.command("unplace")
@reports_errors
def unplace_cmd(kind: KindArg, name: NameArg, dsn: DsnOption = None) -> None:
    """Take a name out of the map (refused while a queue has deliveries on its server)."""
    Cluster(database(dsn), refresh=0.0).unplace(kind, name)
    console.print(f"{kind} {name} unplaced")


@app.command("move")
@reports_errors
def move_cmd(
    queue: Annotated[str, typer.Argument(help="The queue to move.")],
    server: Annotated[str, typer.Argument(help="The server to move it to.")],
    batch: Annotated[int, typer.Option("--batch", min=1, help="Messages per transfer.")] = 500,
    grace: Annotated[
        float, typer.Option("--grace", min=0.0, help="Seconds clients get to re-read the map.")
    ] = 5.0,
    wait: Annotated[
        float, typer.Option("--wait", min=0.0, help="Longest wait for deliveries not yet due.")
    ] = 30.0,
    dsn: DsnOption = None,
) -> None:
    """Move a queue to another server: posts go there, the old server is drained, exactly once."""
    report = move_queue(database(dsn), queue, server, batch=batch, grace=grace, wait=wait)
    if report.by_another:
        console.print(
            f"queue {queue} moved from {report.source} to {report.target} by another move "
            "of it, which this one waited for"
        )
        return
    console.print(
        f"queue {queue} moved from {report.source} to {report.target}: {report.moved} "
        f"message(s) in {report.batches} batch(es), {report.duplicate} re-sent skipped"
    )


@app.command("topic-servers")
@reports_errors
def topic_servers_cmd(
    topic: Annotated[str, typer.Argument(help="The placed topic.")],
    servers: Annotated[list[str], typer.Argument(help="Its new servers (add or remove some).")],
    grace: Annotated[
        float, typer.Option("--grace", min=0.0, help="Seconds clients get to re-read the map.")
    ] = 5.0,
    wait: Annotated[
        float,
        typer.Option("--wait", min=0.0, help="Longest wait for groups to read past the fence."),
    ] = 60.0,
    dsn: DsnOption = None,
) -> None:
    """Spread a topic over other servers: moved keys keep their order for every group."""
    report = change_topic_servers(database(dsn), topic, servers, grace=grace, wait=wait)
    console.print(
        f"topic {topic} now on {','.join(report.servers)} (was {','.join(report.previous)}); "
        f"waited for {len(report.waited_for)} group(s) to read past the fence"
    )


def register(root: typer.Typer) -> None:
    """Add ``pgmbus placement`` to the application."""
    root.add_typer(app, name="placement")
