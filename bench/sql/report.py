"""Print a pgbench scenario's rows: one table per path, sides side by side."""

from __future__ import annotations

from itertools import groupby

from rich.console import Console
from rich.table import Table

from bench.sql.runner import SqlReport


def render(report: SqlReport, console: Console | None = None) -> None:
    """One table per path: messages/s, ratios to raw SQL and to pgmbus, CPU and WAL/message."""
    console = console or Console(width=150)
    console.print(
        f"[bold]{report.scenario}[/] load before {report.loadavg_before.split(' ')[:3]}, "
        f"after {report.loadavg_after.split(' ')[:3]}"
    )
    for path, group in groupby(report.rows, key=lambda r: r.path):
        rows = list(group)
        table = Table(title=f"{report.scenario} / {path}: {rows[0].title}")
        for column in (
            "clients",
            "sync",
            "side",
            "msg/s",
            "÷ raw",
            "pgmbus ÷ side",
            "server CPU µs/msg",
            "WAL B/msg",
            "latency ms",
        ):
            table.add_column(column)
        for row in rows:
            if row.skipped is not None:
                table.add_row("", "", row.side, "skipped", "", "", "", "", row.skipped)
                continue
            vs_raw = row.ratios.get("raw")
            pgmbus_vs = (1.0 / row.ratios["pgmbus"]) if row.ratios.get("pgmbus") else None
            table.add_row(
                str(row.clients),
                "on" if row.sync else "off",
                row.side,
                f"{row.rate:,.0f}",
                f"{vs_raw:.2f}" if vs_raw else "",
                f"{pgmbus_vs:.2f}" if pgmbus_vs else "",
                f"{row.cpu_us_per_msg:.1f}",
                f"{row.wal_bytes_per_msg:.0f}",
                f"{row.latency_ms:.2f}",
            )
        console.print(table)
