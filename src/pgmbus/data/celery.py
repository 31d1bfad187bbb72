"""Data access of the Celery integration (``pgmbus.contrib``): ``sql/celery.sql``."""

from __future__ import annotations

from pgmbus.sqlfiles import load_queries

CELERY = load_queries("celery.sql")
