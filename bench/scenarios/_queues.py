"""Shared pieces of the queue scenarios: the raw-SQL baseline table and a producer/consumer run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

RAW_TABLE = """
CREATE TABLE IF NOT EXISTS bench_raw_queue (
    id bigserial PRIMARY KEY,
    payload jsonb NOT NULL
)"""
RAW_INSERT = "INSERT INTO bench_raw_queue (payload) VALUES (%s)"
RAW_INSERT_MANY = "INSERT INTO bench_raw_queue (payload) SELECT unnest(%s::jsonb[])"
RAW_CLAIM = """
DELETE FROM bench_raw_queue WHERE id = ANY (ARRAY(
    SELECT id FROM bench_raw_queue ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED))
RETURNING id, payload"""


def fresh_queue(dsn: str, name: str) -> None:
    """Drop and create the pgmbus queue ``name`` and empty the raw table."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(RAW_TABLE)
        conn.execute("TRUNCATE bench_raw_queue")
        if conn.execute("SELECT 1 FROM mbus.queue WHERE qname = %s", (name,)).fetchone():
            conn.execute("SELECT mbus.drop_queue(%s)", (name,))
        conn.execute("SELECT mbus.create_queue(%s, 1)", (name,))


def produce_consume(
    dsn: str,
    total: int,
    producers: int,
    consumers: int,
    post: Callable[[psycopg.Connection[Any], int], int],
    claim: Callable[[psycopg.Connection[Any]], int],
) -> float:
    """Run producers and consumers at once until ``total`` messages went through; seconds.

    ``post(conn, i)`` posts starting at message i and returns how many it posted (committed);
    ``claim(conn)`` consumes and commits, returning how many it got.
    """
    consumed = 0
    lock = threading.Lock()
    share = [total // producers + (1 if p < total % producers else 0) for p in range(producers)]
    errors: list[BaseException] = []

    def producer(p: int) -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                i = 0
                while i < share[p]:
                    i += post(conn, i)
        except BaseException as exc:
            errors.append(exc)

    def consumer() -> None:
        nonlocal consumed
        try:
            with psycopg.connect(dsn) as conn:
                while True:
                    with lock:
                        if consumed >= total or errors:
                            return
                    got = claim(conn)
                    if got:
                        with lock:
                            consumed += got
                    else:
                        time.sleep(0.0005)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=producer, args=(p,)) for p in range(producers)]
    threads += [threading.Thread(target=consumer) for _ in range(consumers)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of values, nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]
