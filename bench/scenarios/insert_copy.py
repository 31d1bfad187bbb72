"""Harness check: rows loaded with ``COPY`` (candidate) vs single-row INSERT statements (baseline).

Both load the same rows into the same unlogged table shape in one transaction each; the ratio
shows how much a bulk path buys on this machine and proves that the harness measures.
"""

from __future__ import annotations

import psycopg

from bench.harness import Measurement, timed

name = "insert_copy"
unit = "rows"
goal = "harness self-check: COPY vs single-row INSERT (expect > 1x)"
default_size = 20_000

_CREATE = "CREATE TABLE IF NOT EXISTS bench_rows (id bigint, payload jsonb)"


def setup(dsn: str, size: int) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(_CREATE)


def _rows(size: int) -> list[tuple[int, str]]:
    return [(i, f'{{"n": {i}, "text": "row {i}"}}') for i in range(size)]


def candidate(dsn: str, size: int) -> Measurement:
    rows = _rows(size)
    with psycopg.connect(dsn) as conn:
        conn.execute("TRUNCATE bench_rows")
        conn.commit()

        def load() -> None:
            with conn.cursor() as cur, cur.copy("COPY bench_rows (id, payload) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            conn.commit()

        return timed(size, load)


def baseline(dsn: str, size: int) -> Measurement:
    rows = _rows(size)
    with psycopg.connect(dsn) as conn:
        conn.execute("TRUNCATE bench_rows")
        conn.commit()

        def load() -> None:
            with conn.cursor() as cur:
                for row in rows:
                    cur.execute("INSERT INTO bench_rows (id, payload) VALUES (%s, %s)", row)
            conn.commit()

        return timed(size, load)
