"""``pgmbus install | upgrade | status | uninstall``: the mbus schema in a database."""

from __future__ import annotations

from typing import Annotated

import typer

from pgmbus import __version__, schema
from pgmbus import schedule as upkeep
from pgmbus.cli.common import (
    DsnOption,
    JsonOption,
    connect,
    console,
    database,
    make_table,
    print_json,
    reports_errors,
)
from pgmbus.cli.errors import RUNTIME
from pgmbus.data import replication
from pgmbus.data.install import CLI
from pgmbus.uninstall import uninstall


def _report(result: schema.InstallResult) -> None:
    if result.converted_legacy:
        console.print("converted the pre-release 0.1 layout to the baseline migrations")
    for m in result.migrations:
        console.print(f"applied {m.version:04d}_{m.name}")
    if result.functions_applied:
        count = len(schema.function_set().files)
        console.print(f"applied the function set ({count} files) and regenerated every queue")
    for left in result.removed:
        console.print(f"removed the leftover {left.kind} {left.name}", highlight=False)
    if not result.changed:
        console.print("the mbus schema is up to date; nothing to do")


@reports_errors
def install_cmd(
    dsn: DsnOption = None,
    schedule: Annotated[
        bool,
        typer.Option(
            "--schedule",
            help="Also schedule the storage upkeep with pg_cron (queue rotation, mbus.maintain): "
            "no client needs to run it.",
        ),
    ] = False,
    unschedule: Annotated[
        bool, typer.Option("--unschedule", help="Remove the pg_cron upkeep job of the database.")
    ] = False,
    every: Annotated[
        str,
        typer.Option(
            "--every",
            help="The upkeep job's pg_cron schedule (a cron expression; '<n> seconds' with "
            "pg_cron 1.5+).",
        ),
    ] = upkeep.DEFAULT_EVERY,
) -> None:
    """Install the mbus schema (a no-op when it is installed and current)."""
    if schedule and unschedule:
        raise typer.BadParameter("give --schedule or --unschedule, not both")
    with connect(dsn, need_schema=False) as conn:
        _report(schema.install(conn))
    if schedule:
        job = upkeep.schedule_upkeep(database(dsn), every)
        console.print(
            f"scheduled the upkeep of {job.database} with pg_cron: job {job.jobid} "
            f"'{upkeep.job_name(job.database)}', {job.schedule}",
            highlight=False,
        )
    elif unschedule:
        removed = upkeep.unschedule_upkeep(database(dsn))
        console.print("removed the pg_cron upkeep job" if removed else "no pg_cron upkeep job")


@reports_errors
def upgrade_cmd(dsn: DsnOption = None) -> None:
    """Bring an installed mbus schema up to date: pending migrations, then the functions."""
    with connect(dsn, need_schema=False) as conn:
        _report(schema.upgrade(conn))


@reports_errors
def status_cmd(dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """Show the schema version, applied and pending migrations, and the installed functions."""
    with connect(dsn, need_schema=False) as conn:
        current = schema.status(conn)
        info = conn.execute(CLI["server_info"]).fetchone()
        replica = replication.replication_state(conn)
    db, server = (info[0], info[1]) if info else ("?", "?")
    if as_json:
        print_json(
            {
                "package_version": __version__,
                "database": db,
                "server_version": server,
                "replication": replica,
                "installed": current.installed,
                "schema_version": current.version,
                "latest": current.latest,
                "applied": [
                    {"version": m.version, "name": m.name, "applied_at": m.applied_at}
                    for m in current.applied
                ],
                "pending": [{"version": m.version, "name": m.name} for m in current.pending],
                "legacy_layout": current.legacy,
                "leftovers": [{"kind": x.kind, "name": x.name} for x in current.leftovers],
                "functions": None
                if current.functions is None
                else {
                    "checksum": current.functions.checksum,
                    "package_checksum": schema.function_set().checksum,
                    "installed_by": current.functions.package_version,
                    "installed_at": current.functions.installed_at,
                    "matches_package": current.functions.matches_package,
                    "matches_catalog": current.functions.matches_catalog,
                },
                "up_to_date": current.up_to_date,
                "advice": advice(current),
            }
        )
        if not current.installed:
            raise typer.Exit(RUNTIME)  # a check in a script must not pass on a bare database
        return
    console.print(
        f"pgmbus {__version__} · database [bold]{db}[/] · PostgreSQL {server}", highlight=False
    )
    console.print(f"replication: {replication.describe(replica)}", highlight=False)
    if current.installed and not current.legacy:
        table = make_table("migration", "state", "applied at")
        for m in current.applied:
            table.add_row(
                f"{m.version:04d}_{m.name}",
                "[green]applied[/]",
                f"{m.applied_at:%Y-%m-%d %H:%M:%S%z}",
            )
        for p in current.pending:
            table.add_row(f"{p.version:04d}_{p.name}", "[yellow]pending[/]", "-")
        console.print(table)
        console.print(_functions_line(current), highlight=False)
        for left in current.leftovers:
            console.print(
                f"[yellow]leftover {left.kind}[/] {left.name}: no SQL file defines it",
                highlight=False,
            )
    said = advice(current)
    if said is None:
        by = current.applied[-1].package_version if current.applied else "?"
        console.print(
            f"schema version {current.version} of {current.latest} (last migrated by pgmbus "
            f"{by}): up to date",
            highlight=False,
        )
    else:
        console.print(f"[yellow]{said}[/]", highlight=False)
    if not current.installed:
        raise typer.Exit(RUNTIME)  # a check in a script must not pass on a bare database


@reports_errors
def uninstall_cmd(
    confirm: Annotated[
        str,
        typer.Option(
            "--confirm",
            help="The name of the database to remove pgmbus from (must be the DSN's database): "
            "every queue, stream and timer in it is deleted.",
            show_default=False,
        ),
    ],
    dsn: DsnOption = None,
) -> None:
    """Remove pgmbus from a database: the mbus schema (and its data), its roles, its pg_cron job."""
    with connect(dsn, need_schema=False) as conn:
        removed = uninstall(conn, database(dsn, need_schema=False), confirm=confirm)
    console.print(f"dropped schema mbus of database {removed.database}", highlight=False)
    for kind, name in removed.dependents:
        console.print(f"dropped the {kind} {name} (it used mbus)", highlight=False)
    for role in removed.roles:
        console.print(f"dropped role {role}", highlight=False)
    if removed.cron_job:
        console.print("removed the pg_cron upkeep job", highlight=False)


def advice(current: schema.SchemaStatus) -> str | None:
    """The one thing to do about the schema (None when it is up to date)."""
    if not current.installed:
        return "the mbus schema is not installed: run `pgmbus install`"
    if current.legacy:
        return "the mbus schema has the pre-release 0.1 layout: run `pgmbus upgrade` to convert it"
    if current.pending:
        return (
            f"schema version {current.version} of {current.latest}, "
            f"{len(current.pending)} migration(s) pending: run `pgmbus upgrade`"
        )
    if not current.functions_current:
        return "the mbus functions differ from this package's: run `pgmbus upgrade`"
    if current.leftovers:
        return (
            f"{len(current.leftovers)} leftover object(s) in mbus that no SQL file defines: "
            "run `pgmbus upgrade` to remove them"
        )
    return None


def _functions_line(current: schema.SchemaStatus) -> str:
    f = current.functions
    if f is None:
        return "functions: [yellow]not recorded[/]"
    when = f"installed by pgmbus {f.package_version} at {f.installed_at:%Y-%m-%d %H:%M:%S%z}"
    if not f.matches_package:
        return f"functions: [yellow]differ from this package's[/] ({when})"
    if not f.matches_catalog:
        return f"functions: [yellow]changed in the database since install[/] ({when})"
    return f"functions: [green]match this package[/] ({when})"


def register(app: typer.Typer) -> None:
    """Add the schema commands to the top-level application."""
    app.command("install")(install_cmd)
    app.command("upgrade")(upgrade_cmd)
    app.command("status")(status_cmd)
    app.command("uninstall")(uninstall_cmd)
