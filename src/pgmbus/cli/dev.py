"""``pgmbus dev``: the embedded PostgreSQL cluster used by the demo and the tests."""

from __future__ import annotations

import dataclasses
import os
from typing import Annotated

import typer

from pgmbus.cli.common import (
    JsonOption,
    console,
    make_table,
    print_json,
    reports_errors,
)
from pgmbus.devdb import DevCluster, default_home
from pgmbus.testing.ha import HACluster

app = typer.Typer(
    help="Manage the embedded PostgreSQL cluster under .pgmbus/.", no_args_is_help=True
)


def _show(cluster: DevCluster, as_json: bool) -> None:
    info = cluster.status()
    if as_json:
        print_json({k: str(v) if k == "home" else v for k, v in dataclasses.asdict(info).items()})
        return
    table = make_table("what", "value", show_header=False, box=None)
    table.add_row("home", str(info.home))
    table.add_row("state", "[green]running[/]" if info.running else "[yellow]stopped[/]")
    table.add_row("pid", str(info.pid or "-"))
    table.add_row("port", str(info.port or "-"))
    table.add_row("server user", info.server_user)
    table.add_row("version", info.version or "-")
    table.add_row("dsn", info.dsn or "-")
    console.print(table)


def _ha() -> HACluster:
    """The HA setup of ``pgmbus dev start --ha``: in ``ha/`` under the cluster folder."""
    return HACluster(default_home() / "ha")


def _show_ha(cluster: HACluster, as_json: bool) -> None:
    nodes = cluster.nodes()
    primary = cluster.primary()
    if as_json:
        print_json(
            {
                "home": str(cluster.home),
                "dsn": cluster.dsn(),
                "primary": primary,
                "nodes": [dataclasses.asdict(n) for n in nodes],
            }
        )
        return
    table = make_table("node", "port", "role", "state (reported/assigned)", "healthy")
    for node in nodes:
        role = "[green]primary[/]" if node.name == primary else "standby"
        state = f"{node.reported}/{node.assigned}"
        table.add_row(node.name, str(node.port), role, state, "yes" if node.healthy else "no")
    console.print(table)
    console.print(f"dsn: {cluster.dsn()}")


@app.command()
@reports_errors
def start(
    as_json: JsonOption = False,
    new_port: bool = typer.Option(
        False, "--new-port", help="Move to a free port when the cluster's port is taken."
    ),
    ha: bool = typer.Option(
        False,
        "--ha",
        help="Start a primary with a synchronous standby under pg_auto_failover instead "
        "(a monitor and two nodes in .pgmbus/ha; docs/ha.md).",
    ),
) -> None:
    """Create the cluster on first use and start it (harmless when running); after a crash it
    comes back on the same port."""
    if ha:
        ha_cluster = _ha()
        ha_cluster.start()
        _show_ha(ha_cluster, as_json)
        return
    cluster = DevCluster()
    created = not cluster.initialized
    cluster.start(new_port=new_port)
    if created:  # once, on stderr: a new empty cluster in this folder is worth knowing about
        typer.echo(
            f"created a new cluster at {cluster.home} (its data lives there; "
            "PGMBUS_HOME chooses another folder)",
            err=True,
        )
    _show(cluster, as_json)


@app.command()
@reports_errors
def stop(
    ha: bool = typer.Option(False, "--ha", help="Stop the HA setup of `dev start --ha`."),
) -> None:
    """Stop the cluster (fast shutdown)."""
    if ha:
        ha_cluster = _ha()
        ha_cluster.port("monitor")  # a missing setup is an error that says how to make one
        ha_cluster.stop()
        console.print("stopped")
        return
    cluster = DevCluster()
    cluster.require_initialized()
    was_running = cluster.stop()
    console.print("stopped" if was_running else "not running")


@app.command()
@reports_errors
def status(
    as_json: JsonOption = False,
    ha: bool = typer.Option(
        False, "--ha", help="Show the HA setup's nodes and which one is primary."
    ),
) -> None:
    """Show whether the cluster runs, where, and its DSN."""
    if ha:
        ha_cluster = _ha()
        ha_cluster.port("monitor")
        _show_ha(ha_cluster, as_json)
        return
    cluster = DevCluster()
    cluster.require_initialized()
    _show(cluster, as_json)


@app.command()
@reports_errors
def dsn() -> None:
    """Print the cluster's connection string (for PGMBUS_DSN)."""
    cluster = DevCluster()
    cluster.require_initialized()
    typer.echo(cluster.dsn())


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@reports_errors
def psql(
    args: Annotated[
        list[str] | None,
        typer.Argument(help="Arguments for psql, after --: pgmbus dev psql -- -c 'select 1'"),
    ] = None,
) -> None:
    """Open psql on the cluster's pgmbus database (starting the cluster when it is stopped;
    it never creates one)."""
    cluster = DevCluster()
    cluster.require_initialized()
    if not cluster.status().running:
        typer.echo(f"starting the cluster at {cluster.home}", err=True)
        cluster.start()
    argv = [*cluster.psql_argv(), *(args or [])]
    os.execv(argv[0], argv)  # noqa: S606 - replacing this process with psql is the point


@app.command()
@reports_errors
def destroy(yes: bool = typer.Option(False, "--yes", help="Do not ask.")) -> None:
    """Stop the cluster and delete its folder and data."""
    cluster = DevCluster()
    if not cluster.home.exists():
        typer.echo(f"nothing to delete: no cluster at {cluster.home}")
        return
    if not yes and not typer.confirm(f"delete {cluster.home} and all its data?"):
        raise typer.Exit(1)
    cluster.destroy()
    console.print(f"deleted {cluster.home}")
