"""Data access of the Spark connector: ``sql/spark.sql``."""

from __future__ import annotations

from pgmbus.sqlfiles import load_queries

SPARK = load_queries("spark.sql")
