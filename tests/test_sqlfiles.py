"""Named SQL blocks load from package files."""

from __future__ import annotations

from pgmbus.sqlfiles import load_queries, read_sql


def test_schema_queries_are_named_blocks() -> None:
    queries = load_queries("schema.sql")
    assert {"ledger_exists", "applied", "record", "lock", "unlock"} <= set(queries)
    assert all(q.strip() and "-- name:" not in q for q in queries.values())


def test_bootstrap_is_idempotent_sql() -> None:
    text = read_sql("bootstrap.sql")
    assert "IF NOT EXISTS" in text
