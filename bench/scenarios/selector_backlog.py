"""A selective consumer on a queue holding a large backlog for other consumers.

The queue holds ``size`` messages (default 100k) for a bulk consumer; a second consumer's
selector matches 1 in 100 of the new posts. Candidate: claim those one by one with
``consumen_<q>_by_rare(1)`` with the backlog in place. Baseline: the same claims on the original
mbus design done in raw SQL (one table, a partial index per consumer, ``DELETE ... SKIP LOCKED``).
``extra.rate_without_backlog`` is the candidate's rate on an empty queue, so
``rate / rate_without_backlog`` shows whether the cost stays flat as the backlog grows.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from bench.harness import Measurement

name = "selector_backlog"
unit = "claims"
goal = "selective consumer's claim cost flat with a 100k backlog for others"
default_size = 100_000


def _claims_for(size: int) -> int:
    """1,000 selective claims at full size (1 in 100 of the backlog on small runs)."""
    return max(5, min(1_000, size // 100))


RAW = """
CREATE TABLE IF NOT EXISTS bench_sel (id bigserial PRIMARY KEY, properties jsonb, data jsonb);
CREATE INDEX IF NOT EXISTS bench_sel_rare ON bench_sel (id) WHERE properties ? 'rare';
"""
RAW_CLAIM = """
DELETE FROM bench_sel WHERE id = ANY (ARRAY(
    SELECT id FROM bench_sel WHERE properties ? 'rare' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED))
RETURNING id"""


def _queue(conn: psycopg.Connection[Any], name_: str, backlog: int, claims: int) -> None:
    if conn.execute("SELECT 1 FROM mbus.queue WHERE qname = %s", (name_,)).fetchone():
        conn.execute("SELECT mbus.drop_queue(%s)", (name_,))
    conn.execute("SELECT mbus.create_queue(%s, 1)", (name_,))
    conn.execute("SELECT mbus.drop_consumer(%s, 'default')", (name_,))
    conn.execute(
        "SELECT mbus.create_consumer(%s, %s, $$t.properties ? 'bulk'$$)", (name_, name_ + "_bulk")
    )
    conn.execute(
        "SELECT mbus.create_consumer(%s, %s, $$t.properties ? 'rare'$$)", (name_, name_ + "_rare")
    )
    for start in range(0, backlog, 5_000):
        n = min(5_000, backlog - start)
        conn.execute(
            "SELECT count(*) FROM mbus.post_batch(%s, array_fill('{}'::jsonb, ARRAY[%s]),"
            " properties => array_fill('{\"bulk\": 1}'::jsonb, ARRAY[%s]))",
            (name_, n, n),
        )
    conn.execute(
        "SELECT count(*) FROM mbus.post_batch(%s, array_fill('{}'::jsonb, ARRAY[%s]),"
        " properties => array_fill('{\"rare\": 1}'::jsonb, ARRAY[%s]))",
        (name_, claims, claims),
    )


def setup(dsn: str, size: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(RAW)


def _claims(conn: psycopg.Connection[Any], query: Any, claims: int) -> float:
    start = time.perf_counter()
    for _ in range(claims):
        got = conn.execute(query).fetchall()
        conn.commit()
        assert len(got) == 1
    return time.perf_counter() - start


def candidate(dsn: str, size: int) -> Measurement:
    claims = _claims_for(size)
    with psycopg.connect(dsn, autocommit=True) as admin:
        _queue(admin, "selq", size, claims)
        _queue(admin, "emptyq", 0, claims)
        admin.execute("VACUUM ANALYZE mbus.q_selq")
        admin.execute("CHECKPOINT")  # both sides measure without the load's writes pending
    with psycopg.connect(dsn) as conn:
        seconds = _claims(conn, "SELECT id FROM mbus.consumen_selq_by_selq_rare(1)", claims)
        empty = _claims(conn, "SELECT id FROM mbus.consumen_emptyq_by_emptyq_rare(1)", claims)
    return Measurement(claims, seconds, {"rate_without_backlog": claims / empty})


def baseline(dsn: str, size: int) -> Measurement:
    claims = _claims_for(size)
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("TRUNCATE bench_sel")
        admin.execute(
            "INSERT INTO bench_sel (properties, data) SELECT '{\"bulk\": 1}', '{}'"
            " FROM generate_series(1, %s)",
            (size,),
        )
        admin.execute(
            "INSERT INTO bench_sel (properties, data) SELECT '{\"rare\": 1}', '{}'"
            " FROM generate_series(1, %s)",
            (claims,),
        )
        admin.execute("VACUUM ANALYZE bench_sel")
        admin.execute("CHECKPOINT")
    with psycopg.connect(dsn) as conn:
        return Measurement(claims, _claims(conn, RAW_CLAIM, claims))
