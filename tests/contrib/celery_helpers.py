"""Helpers of the Celery tests: the effects tasks record, waiting on a condition."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[2]

Start = Callable[..., subprocess.Popen[bytes]]


def effects(dsn: str, key: str) -> list[tuple[str, dict[str, Any], Any]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT worker, info, at FROM celery_effects WHERE key = %s ORDER BY at", (key,)
        ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def wait_for(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.1)
