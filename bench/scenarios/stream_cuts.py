"""One long transaction read in cuts: the SQL of Spark's micro-batches and the live listeners.

``setup`` publishes ``size`` events in one transaction. The candidate walks it as the Spark
stream source does with ``maxEventsPerTrigger``: ``mbus.spark_next_cursor`` cuts 1,000 events
(``PGMBUS_BENCH_CUT``) at a time, and each cut is read as two parts of ``mbus.spark_read`` with
literal cursors, copied out in binary (the source's ADBC ``COPY``). The baseline reads the same
events in one cut, the same way. So the ratio is what cutting costs: a fraction that must not
shrink as the transaction grows (a cut that read the transaction from its start would cost
0.45 s per cut of 10,000 at 1,000,000 events).
"""

from __future__ import annotations

import os
import time

import psycopg
from psycopg import sql

from bench.harness import Measurement

name = "stream_cuts"
unit = "events"
goal = "one transaction read in cuts of 1,000 vs in one piece: a fraction flat in its size"
default_size = 300_000

_READ = "COPY (SELECT * FROM mbus.spark_read({}, {}, NULL, {}, 2)) TO STDOUT (FORMAT binary)"


def _cut() -> int:
    return int(os.environ.get("PGMBUS_BENCH_CUT", "1000"))


def setup(dsn: str, size: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE bench_cuts (first text NOT NULL, last text NOT NULL)")
        first = conn.execute("SELECT mbus.current_cursor()").fetchone()
        conn.execute(
            "INSERT INTO mbus.events (topic, key, payload) "
            "SELECT 'bench.cuts', 'k' || (g %% 1000), jsonb_build_object('n', g) "
            "FROM generate_series(1, %s) AS g",
            (size,),
        )
        last = conn.execute("SELECT mbus.current_cursor()").fetchone()
        assert first is not None and last is not None
        conn.execute("INSERT INTO bench_cuts VALUES (%s, %s)", (first[0], last[0]))
        conn.execute("VACUUM ANALYZE mbus.events")  # hint bits set: no side pays for them


def _walk(dsn: str, size: int, cut: int | None) -> Measurement:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT first, last FROM bench_cuts").fetchone()
        assert row is not None
        position, last = str(row[0]), str(row[1])
        cuts = 0
        copied = 0
        start = time.perf_counter()
        while True:
            found = conn.execute(
                "SELECT mbus.spark_next_cursor(%s, %s, %s)", (position, last, cut)
            ).fetchone()
            assert found is not None
            end = str(found[0])
            if end == position:
                break
            for part in range(2):
                query = sql.SQL(_READ).format(
                    sql.Literal(position), sql.Literal(end), sql.Literal(part)
                )
                with conn.cursor().copy(query) as copy:
                    copied += sum(len(block) for block in copy)
            position = end
            cuts += 1
        seconds = time.perf_counter() - start
        read = conn.execute(
            "SELECT count(*) FROM mbus.read_between(%s, %s)", (str(row[0]), position)
        ).fetchone()
    assert read == (size,), read  # the walk ended at the end of the transaction
    return Measurement(size, seconds, {"cuts": cuts, "copied_mb": copied / 1e6})


def candidate(dsn: str, size: int) -> Measurement:
    return _walk(dsn, size, _cut())


def baseline(dsn: str, size: int) -> Measurement:
    return _walk(dsn, size, None)
