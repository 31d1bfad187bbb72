"""Shared pieces of the queue scenarios: the raw-SQL baseline table and a producer/consumer run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

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


class BatchWork:
    """Post and claim ``batch`` messages per call, through pgmbus and through the raw table.

    The four methods fit ``produce_consume``: ``post``/``raw_post`` post one batch starting at
    message i; ``claim``/``raw_claim`` claim up to one batch and commit.
    """

    def __init__(self, queue: str, batch: int, body_size: int) -> None:
        self.batch = batch
        self.body = "x" * body_size
        self._post_sql = sql.SQL("SELECT count(*) FROM mbus.{}(%s)").format(
            sql.Identifier(f"postn_{queue}")
        )
        self._claim_sql = sql.SQL("SELECT id FROM mbus.{}(%s)").format(
            sql.Identifier(f"consumen_{queue}_by_default")
        )

    def _messages(self, i: int) -> list[Jsonb]:
        return [Jsonb({"n": i + k, "body": self.body}) for k in range(self.batch)]

    def post(self, conn: psycopg.Connection[Any], i: int) -> int:
        conn.execute(self._post_sql, (self._messages(i),))
        return self.batch

    def claim(self, conn: psycopg.Connection[Any]) -> int:
        rows = conn.execute(self._claim_sql, (self.batch,)).fetchall()
        conn.commit()
        return len(rows)

    def raw_post(self, conn: psycopg.Connection[Any], i: int) -> int:
        conn.execute(RAW_INSERT_MANY, (self._messages(i),))
        return self.batch

    def raw_claim(self, conn: psycopg.Connection[Any]) -> int:
        rows = conn.execute(RAW_CLAIM, (self.batch,)).fetchall()
        conn.commit()
        return len(rows)
