"""Stream metrics in the Prometheus text format (no dependency: plain text)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg

from pgmbus.streams.client import counters, group_status


def _label(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def metrics_text(conn: psycopg.Connection[Any]) -> str:
    """Counters (groups expired, dead letters) and per-group gauges, ready for a scrape."""
    lines = [
        "# HELP pgmbus_streams_events_total Noteworthy stream events by kind.",
        "# TYPE pgmbus_streams_events_total counter",
    ]
    for name, count in counters(conn).items():
        lines.append(f'pgmbus_streams_events_total{{kind="{_label(name)}"}} {count}')
    gauges = {
        "pending_events": "Committed events the group (slot) has not consumed.",
        "retries": "Events of the group waiting on the retry path.",
        "dead_letters": "Events of the group in the dead letters.",
        "expired": "1 when the group was expired for lagging past its max_lag.",
        "oldest_pending_age_seconds": "Age of the oldest unconsumed event.",
    }
    rows = group_status(conn)
    now = datetime.now(UTC)
    for key, help_text in gauges.items():
        lines.append(f"# HELP pgmbus_streams_group_{key} {help_text}")
        lines.append(f"# TYPE pgmbus_streams_group_{key} gauge")
        for r in rows:
            labels = f'group="{_label(r["group_name"])}",slot="{r["slot"]}"'
            if key == "expired":
                value: float = 1.0 if r["state"] == "expired" else 0.0
            elif key == "oldest_pending_age_seconds":
                oldest = r["oldest_pending_at"]
                value = max((now - oldest).total_seconds(), 0.0) if oldest else 0.0
            else:
                value = float(r[key])
            lines.append(f"pgmbus_streams_group_{key}{{{labels}}} {value:g}")
    return "\n".join(lines) + "\n"
