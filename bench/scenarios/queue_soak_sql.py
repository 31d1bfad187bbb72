"""SQL-only consumers (nobody calls rotate_queue): the claims' own upkeep keeps storage flat.

``queue_soak`` with the consumers a SQL-only user has: two producers post 50 per call and two
consumers claim 50 per call with ``consumen_<q>_by_default(50)`` in autocommit (no
parameters: the simple protocol, where the claims' upkeep may truncate), and no one runs
``mbus.rotate_queue``: no ``Bus``, no worker, no scheduler. Candidate: the claims run the
upkeep themselves (``queue_segment.upkeep_every``, default 1 s). Baseline: the same work with
that upkeep off (``upkeep_every = NULL``), as before it existed. ``extra`` as in
``queue_soak`` (window rates and sizes, largest and final size, rotations and truncations).
"""

from __future__ import annotations

from typing import Any

import psycopg

from bench.harness import Measurement
from bench.scenarios import queue_soak
from bench.scenarios._queues import fresh_queue

name = "queue_soak_sql"
unit = "messages"
goal = "size flat with SQL-only consumers (claims' upkeep) vs growing without it; rate >= 1x"
default_size = 100_000
WORK = queue_soak.WORK


def setup(dsn: str, size: int) -> None:
    fresh_queue(dsn, "soak")


CLAIM = f"SELECT id FROM mbus.consumen_soak_by_default({queue_soak.BATCH})"


def _claim(conn: psycopg.Connection[Any]) -> int:
    """One consumen call in autocommit, sent without parameters (the simple protocol, as psql
    sends it): claim and delete in a transaction of its own, where the upkeep may truncate.
    Claims with parameters (extended protocol) rotate without truncating (see queues.md)."""
    if not conn.autocommit:
        conn.autocommit = True
    return len(conn.execute(CLAIM).fetchall())


def _post(conn: psycopg.Connection[Any], i: int) -> int:
    return WORK.post(conn, i)


def _off(conn: psycopg.Connection[Any], i: int) -> int:
    """Post, with the claims' upkeep switched off first (fresh_queue made the queue again)."""
    if i == 0:
        conn.execute("UPDATE mbus.queue_segment SET upkeep_every = NULL WHERE qname = 'soak'")
    return WORK.post(conn, i)


def _counts(dsn: str, m: Measurement) -> Measurement:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT rotations, truncations FROM mbus.queue_segment WHERE qname = 'soak'"
        ).fetchone()
    m.extra.update(rotations=row[0] if row else 0, truncations=row[1] if row else 0)
    return m


def candidate(dsn: str, size: int) -> Measurement:
    return _counts(dsn, queue_soak._soak(dsn, size, "mbus.q_soak", _post, _claim, upkeep=False))


def baseline(dsn: str, size: int) -> Measurement:
    return _counts(dsn, queue_soak._soak(dsn, size, "mbus.q_soak", _off, _claim, upkeep=False))
