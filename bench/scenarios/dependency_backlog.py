"""Consuming from a queue where many messages wait on dependencies (consume_after).

The queue holds ``size`` messages (default 100k) that wait on a message nobody consumes, plus
the ready messages to claim. Candidate: claim those one by one with ``consumen_<q>_by_default(1)``
with the waiting backlog in place. Baseline: the same claims on the same kind of queue without
waiting messages. Both sides commit every claim with ``synchronous_commit = off``. The design
document warns that many waiting messages slow a queue; waiting messages live at ``vt = infinity``
behind every claim's index range, so the ratio should stay near 1.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from bench.harness import Measurement

name = "dependency_backlog"
unit = "claims"
goal = "claim cost with 100k messages waiting on dependencies ~ the same queue without them"
default_size = 100_000


def _claims_for(size: int) -> int:
    return max(5, min(2_000, size // 50))


def _fresh(conn: psycopg.Connection[Any], queue: str) -> None:
    if conn.execute("SELECT 1 FROM mbus.queue WHERE qname = %s", (queue,)).fetchone():
        conn.execute("SELECT mbus.drop_queue(%s)", (queue,))
    conn.execute("SELECT mbus.create_queue(%s, 1)", (queue,))


def _load(conn: psycopg.Connection[Any], queue: str, waiting: int, ready: int) -> None:
    _fresh(conn, queue)
    if waiting:
        _fresh(conn, "depblock")
        block = conn.execute("SELECT mbus.post_depblock('{}')").fetchone()
        assert block is not None
        for start in range(0, waiting, 2_000):
            n = min(2_000, waiting - start)
            conn.execute(
                "SELECT count(*) FROM mbus.post_batch(%s, array_fill('{}'::jsonb, ARRAY[%s]),"
                " array_fill(jsonb_build_object('consume_after', %s::text), ARRAY[%s]))",
                (queue, n, block[0], n),
            )
    conn.execute(
        "SELECT count(*) FROM mbus.post_batch(%s, array_fill('{}'::jsonb, ARRAY[%s]))",
        (queue, ready),
    )
    conn.execute(f"VACUUM ANALYZE mbus.q_{queue}")  # queue names are fixed here
    # The bookkeeping tables took size rows each: vacuum them now, or autovacuum competes with
    # the measured claims for this machine's two cores.
    conn.execute("VACUUM ANALYZE mbus.msg_wait, mbus.msg_dep")
    conn.execute("CHECKPOINT")


def _claims(dsn: str, queue: str, claims: int) -> float:
    with psycopg.connect(dsn) as conn:
        # Both sides alike: without waiting for the WAL flush, the rate shows the claim's cost
        # rather than this machine's fsync latency (which dominates and varies run to run).
        conn.execute("SET synchronous_commit = off")
        conn.commit()
        query = f"SELECT id FROM mbus.consumen_{queue}_by_default(1)"  # fixed name
        start = time.perf_counter()
        for _ in range(claims):
            got = conn.execute(query).fetchall()  # type: ignore[call-overload]
            conn.commit()
            assert len(got) == 1
        return time.perf_counter() - start


def setup(dsn: str, size: int) -> None:
    del dsn, size


def candidate(dsn: str, size: int) -> Measurement:
    claims = _claims_for(size)
    with psycopg.connect(dsn, autocommit=True) as admin:
        _load(admin, "depwait", size, claims)
        waiting = admin.execute("SELECT count(*) FROM mbus.msg_wait").fetchone()
    seconds = _claims(dsn, "depwait", claims)
    return Measurement(claims, seconds, {"waiting": float(waiting[0] if waiting else 0)})


def baseline(dsn: str, size: int) -> Measurement:
    claims = _claims_for(size)
    with psycopg.connect(dsn, autocommit=True) as admin:
        _load(admin, "depnone", 0, claims)
    return Measurement(claims, _claims(dsn, "depnone", claims))
