"""Data access of install, upgrade, status and uninstall: ``sql/schema.sql``,
``sql/uninstall.sql``, ``sql/schedule.sql`` (the pg_cron upkeep job) and ``sql/cli.sql``."""

from __future__ import annotations

from typing import Any

import psycopg

from pgmbus.sqlfiles import load_queries

SCHEMA = load_queries("schema.sql")
UNINSTALL = load_queries("uninstall.sql")
SCHEDULE = load_queries("schedule.sql")
CLI = load_queries("cli.sql")


def ledger_exists(conn: psycopg.Connection[Any]) -> bool:
    """Whether the database has the migration ledger (an installed mbus schema)."""
    row = conn.execute(SCHEMA["ledger_exists"]).fetchone()
    return bool(row and row[0])
