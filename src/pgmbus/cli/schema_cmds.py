"""``pgmbus install | upgrade | status``: the mbus schema in a database."""

from __future__ import annotations

import typer
from rich.table import Table

from pgmbus import __version__, schema
from pgmbus.cli.common import DsnOption, JsonOption, connect, console, print_json, reports_errors


@reports_errors
def install_cmd(dsn: DsnOption = None) -> None:
    """Install the mbus schema (a no-op when it is installed and current)."""
    with connect(dsn) as conn:
        applied = schema.install(conn)
    if applied:
        for m in applied:
            console.print(f"applied {m.version:04d}_{m.name}")
    else:
        console.print("the mbus schema is up to date; nothing to do")


@reports_errors
def upgrade_cmd(dsn: DsnOption = None) -> None:
    """Apply the package's pending migrations to an installed schema."""
    with connect(dsn) as conn:
        applied = schema.upgrade(conn)
    for m in applied:
        console.print(f"applied {m.version:04d}_{m.name}")
    if not applied:
        console.print("the mbus schema is up to date; nothing to do")


@reports_errors
def status_cmd(dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """Show the schema version, applied and pending migrations."""
    with connect(dsn) as conn:
        current = schema.status(conn)
        server = conn.execute("SELECT current_setting('server_version')").fetchone()
        db = conn.execute("SELECT current_database()").fetchone()
    if as_json:
        print_json(
            {
                "package_version": __version__,
                "database": db[0] if db else None,
                "server_version": server[0] if server else None,
                "installed": current.installed,
                "schema_version": current.version,
                "latest": current.latest,
                "applied": [
                    {"version": m.version, "name": m.name, "applied_at": m.applied_at}
                    for m in current.applied
                ],
                "pending": [{"version": m.version, "name": m.name} for m in current.pending],
            }
        )
        return
    console.print(
        f"pgmbus {__version__} · database [bold]{db[0] if db else '?'}[/] · "
        f"PostgreSQL {server[0] if server else '?'}"
    )
    if not current.installed:
        console.print("[yellow]the mbus schema is not installed[/] (run `pgmbus install`)")
    table = Table("migration", "state", "applied at")
    for m in current.applied:
        table.add_row(
            f"{m.version:04d}_{m.name}", "[green]applied[/]", f"{m.applied_at:%Y-%m-%d %H:%M:%S%z}"
        )
    for p in current.pending:
        table.add_row(f"{p.version:04d}_{p.name}", "[yellow]pending[/]", "-")
    console.print(table)
    state = "up to date" if current.up_to_date else "needs `pgmbus upgrade`"
    console.print(f"schema version {current.version} of {current.latest}: {state}")


def register(app: typer.Typer) -> None:
    """Add the schema commands to the top-level application."""
    app.command("install")(install_cmd)
    app.command("upgrade")(upgrade_cmd)
    app.command("status")(status_cmd)
