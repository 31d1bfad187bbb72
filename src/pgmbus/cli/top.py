"""``pgmbus top``: a live terminal view of queues, stream groups and timers.

Each frame is one run of the snapshot query behind ``/metrics`` (``sql/http.sql``: ``snapshot``),
so what ``top`` shows is what Prometheus scrapes.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated, Any

import psycopg
import typer
from rich.console import Group, RenderableType
from rich.live import Live
from rich.text import Text

from pgmbus.cli.common import DsnOption, JsonOption, connect, console, make_table, print_json
from pgmbus.sqlfiles import load_queries

RECENT_WINDOW_S = 60.0


def fetch(conn: psycopg.Connection[Any], late_after: float) -> dict[str, Any]:
    """One snapshot (one statement) as the JSON document of the ``snapshot`` query."""
    params = {"late_s": late_after, "window_s": RECENT_WINDOW_S, "buckets": [1.0]}
    row = conn.execute(load_queries("http.sql")["snapshot"], params).fetchone()
    snapshot: dict[str, Any] = row[0] if row else {}
    return snapshot


def _seconds(value: float | None) -> str:
    return "-" if not value else f"{value:,.1f}"


def render(snap: dict[str, Any], title: str) -> RenderableType:
    """One frame: a title line and the queues, groups and timers tables."""
    queues = make_table(
        "queue",
        "consumer",
        "depth",
        "ready",
        "delayed",
        "leased",
        "oldest (s)",
        "dmq",
        title="queues",
        title_justify="left",
    )
    for q in snap.get("queues", []):
        queues.add_row(
            q["queue"],
            q["consumer"],
            str(q["depth"]),
            str(q["ready"]),
            str(q["delayed"]),
            str(q["leased"]),
            _seconds(q["oldest_age"]),
            str(q["dmq"]),
        )
    groups = make_table(
        "group",
        "slot",
        "state",
        "lag (events)",
        "lag (s)",
        "retries",
        "dmq",
        title="stream groups",
        title_justify="left",
    )
    for g in snap.get("groups", []):
        groups.add_row(
            g["group"],
            str(g["slot"]),
            g["state"],
            str(g["pending"]),
            _seconds(g["lag_seconds"]),
            str(g["retries"]),
            str(g["dead_letters"]),
        )
    t = snap.get("timers", {})
    by_status = t.get("by_status", {})
    timers = make_table(
        "pending",
        "due",
        "late",
        "oldest due (s)",
        "failed",
        "dispatchers",
        title="timers",
        title_justify="left",
    )
    timers.add_row(
        str(by_status.get("pending", 0)),
        str(t.get("due", 0)),
        str(t.get("late", 0)),
        _seconds(t.get("oldest_due_age")),
        str(by_status.get("failed", 0)),
        str(t.get("dispatchers", 0)),
    )
    return Group(Text(title, style="bold"), queues, groups, timers)


def top_cmd(
    dsn: DsnOption = None,
    interval: Annotated[
        float, typer.Option("--interval", "-i", min=0.1, help="Seconds between frames.")
    ] = 2.0,
    once: Annotated[bool, typer.Option("--once", help="Print one frame and exit.")] = False,
    late_after: Annotated[
        float, typer.Option("--late-after", min=0, help="Seconds due before a timer is late.")
    ] = 5.0,
    as_json: JsonOption = False,
) -> None:
    """Live view of queues (depth, ready, oldest, dmq), stream groups (lag) and timers.

    Refreshes every --interval seconds until Ctrl-C; --once prints one frame (--json: the
    snapshot document).
    """
    with connect(dsn) as conn:
        database = conn.info.dbname

        def frame() -> RenderableType:
            stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            return render(fetch(conn, late_after), f"pgmbus top · {database} · {stamp}")

        if as_json:
            print_json(fetch(conn, late_after))
            return
        if once:
            console.print(frame())
            return
        try:
            with Live(frame(), console=console, auto_refresh=False, screen=False) as live:
                while True:
                    time.sleep(interval)
                    live.update(frame(), refresh=True)
        except KeyboardInterrupt:
            return


def register(root: typer.Typer) -> None:
    """Add ``pgmbus top`` to the root command."""
    root.command("top")(top_cmd)
