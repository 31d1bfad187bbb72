"""Data access of the exchange between databases: ``sql/exchange.sql``."""

from __future__ import annotations

from pgmbus.sqlfiles import load_queries

EXCHANGE = load_queries("exchange.sql")
