"""Plans of the statements a test runs, nested ones too (auto_explain sent to the client)."""

from __future__ import annotations

from typing import Any

import psycopg


def explain_to_client(conn: psycopg.Connection[Any], *, analyze: bool = False) -> list[str]:
    """From now on, the plan of every statement conn runs, nested ones too, collected in the
    returned list; with actual rows and buffers when analyze. ``SET
    auto_explain.log_min_duration = -1`` stops it."""
    plans: list[str] = []
    conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    conn.execute("SET auto_explain.log_min_duration = 0")
    conn.execute("SET auto_explain.log_nested_statements = on")
    if analyze:
        conn.execute("SET auto_explain.log_analyze = on")
        conn.execute("SET auto_explain.log_buffers = on")
    conn.execute("SET auto_explain.log_level = notice")
    return plans
