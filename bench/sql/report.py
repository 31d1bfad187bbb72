"""Print a pgbench scenario's rows: one table per path, sides side by side."""

from __future__ import annotations

from itertools import groupby
from typing import Any

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


def markdown(data: dict[str, Any]) -> str:
    """A report's JSON (``SqlReport.as_dict()``) as one Markdown table per path."""
    lines: list[str] = []
    rows = data["rows"]
    for path in dict.fromkeys(r["path"] for r in rows):
        mine = [r for r in rows if r["path"] == path]
        lines += [
            f"**{path}**",
            "",
            "| clients | sync commit | side | msg/s | ÷ raw | pgmbus ÷ side "
            "| server CPU µs/msg | WAL B/msg |",
            "|---|---|---|---:|---:|---:|---:|---:|",
        ]
        for r in mine:
            if "skipped" in r:
                lines.append(f"| | | {r['side']} | skipped: {r['skipped']} | | | | |")
                continue
            vs_raw = r["ratios"].get("raw")
            vs_mbus = r["ratios"].get("pgmbus")
            lines.append(
                f"| {r['clients']} | {r['synchronous_commit']} | {r['side']} "
                f"| {r['messages_per_s']:,.0f} | {f'{vs_raw:.2f}' if vs_raw else ''} "
                f"| {f'{1 / vs_mbus:.2f}' if vs_mbus else ''} "
                f"| {r['server_cpu_us_per_msg']:.1f} | {r['wal_bytes_per_msg']:.0f} |"
                + (" (drained)" if r.get("drained") else "")
            )
        lines.append("")
    return "\n".join(lines)
