"""Data access of scale-out: ``sql/scaleout.sql``, and ``sql/workers_placed.sql`` that placed
workers read the map with."""

from __future__ import annotations

from pgmbus.sqlfiles import load_queries

SCALEOUT = load_queries("scaleout.sql")
WORKERS_PLACED = load_queries("workers_placed.sql")
