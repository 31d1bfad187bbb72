"""Data access of the timers engine: ``sql/timers.sql``."""

from __future__ import annotations

from pgmbus.sqlfiles import load_queries

TIMERS = load_queries("timers.sql")
