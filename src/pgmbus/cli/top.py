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
from pgmbus.data.service import snapshot as fetch_snapshot

RECENT_WINDOW_S = 60.0


def fetch(conn: psycopg.Connection[Any], late_after: float) -> dict[str, Any]:
    """One snapshot (one statement) as the JSON document of the ``snapshot`` query."""
    params = {
        "late_s": late_after,
        "window_s": RECENT_WINDOW_S,
        "buckets": [1.0],
        "after_xid": None,
    }
    snapshot = fetch_snapshot(conn, params) or {}
    # the timer call figures are running totals of the process serving /metrics (no after_xid:
    # nothing counted here); a one-off frame has none to show
    snapshot.pop("calls", None)
    return snapshot


def _seconds(value: float | None) -> str:
    return "-" if not value else f"{value:,.1f}"


FIXED_LINES = 19
"""Lines of a frame besides the rows of the queues and groups tables: the title, three tables'
titles, headers and borders, the timers row, and two lines for rows left out."""


def row_budget(height: int, queues: int, groups: int) -> tuple[int, int]:
    """How many queue and group rows fit a terminal ``height`` lines high (at least one each,
    when there are any): the timers table below them always stays in view."""
    room = max(2, height - FIXED_LINES)
    if queues + groups <= room:
        return queues, groups
    shown_groups = min(groups, max(1, room // 3))
    shown_queues = min(queues, max(1, room - shown_groups))
    return shown_queues, min(groups, max(1 if groups else 0, room - shown_queues))


def _left_out(what: str, n: int) -> Text | None:
    if n <= 0:
        return None
    return Text(
        f"… {n} more {what} not shown (a taller terminal, `pgmbus top --once | less`, or --json)",
        style="yellow",
    )


def render(snap: dict[str, Any], title: str, height: int | None = None) -> RenderableType:
    """One frame: a title line and the queues, groups and timers tables.

    With ``height`` (a live view in a terminal) the queues and groups tables keep to the rows
    that fit, and a line says how many were left out: the frame is never cut from below.
    """
    all_queues = snap.get("queues", [])
    all_groups = snap.get("groups", [])
    if height is None:
        n_queues, n_groups = len(all_queues), len(all_groups)
    else:
        n_queues, n_groups = row_budget(height, len(all_queues), len(all_groups))
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
    for q in all_queues[:n_queues]:
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
    for g in all_groups[:n_groups]:
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
    parts: list[RenderableType | None] = [
        Text(title, style="bold"),
        queues,
        _left_out("queue rows", len(all_queues) - n_queues),
        groups,
        _left_out("group rows", len(all_groups) - n_groups),
        timers,
    ]
    return Group(*(p for p in parts if p is not None))


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

        def frame(height: int | None = None) -> RenderableType:
            stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            title = f"pgmbus top · {database} · {stamp}"
            return render(fetch(conn, late_after), title, height)

        if as_json:
            print_json(fetch(conn, late_after))
            return
        if once:
            console.print(frame())
            return
        try:
            if not console.is_terminal:  # nothing to redraw on: one plain frame per interval
                while True:
                    console.print(frame())
                    time.sleep(interval)
            with Live(
                frame(console.height), console=console, auto_refresh=False, screen=False
            ) as live:
                while True:
                    time.sleep(interval)
                    live.update(frame(console.height), refresh=True)
        except KeyboardInterrupt:
            return


def register(root: typer.Typer) -> None:
    """Add ``pgmbus top`` to the root command."""
    root.command("top")(top_cmd)
