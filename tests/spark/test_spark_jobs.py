"""The shipped jobs: archive to Parquet and back, edit statistics exactly once."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import psycopg

from pgmbus.spark.jobs.archive import archive, read_archive
from pgmbus.spark.jobs.stats import StatsJob


def _old_events(dsn: str, topic: str, n: int, when: dt.datetime) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "INSERT INTO mbus.events (topic, key, payload, published_at) "
            "SELECT %s, 'k' || g, jsonb_build_object('n', g), %s + g * interval '1 minute' "
            "FROM generate_series(1, %s) AS g",
            (topic, when, n),
        )


def test_archive_copies_old_events_once_and_reads_back(
    spark: Any, db_dsn: str, tmp_path: Path
) -> None:
    now = dt.datetime.now(dt.UTC)
    _old_events(db_dsn, "orders", 30, now - dt.timedelta(days=3))
    _old_events(db_dsn, "users", 20, now - dt.timedelta(days=2))
    _old_events(db_dsn, "orders", 10, now - dt.timedelta(minutes=30))  # newer than the horizon
    path = str(tmp_path / "archive")
    horizon = now - dt.timedelta(days=1)

    first = archive(spark, db_dsn, path, before=horizon, max_events_per_batch=20)
    again = archive(spark, db_dsn, path, before=horizon)  # idempotent: nothing new
    assert (first.rows, again.rows) == (50, 0)
    assert first.batches == 3

    back = read_archive(spark, path)
    got = sorted(
        (r.id, r.topic, r.key, json.loads(r.payload), r.published_at.replace(tzinfo=dt.UTC))
        for r in back.collect()
    )
    with psycopg.connect(db_dsn) as conn:
        want = conn.execute(
            "SELECT id, topic, key, payload, published_at FROM mbus.events "
            "WHERE published_at < %s ORDER BY id",
            (horizon,),
        ).fetchall()
        marked = conn.execute(
            "SELECT count(*) FROM mbus.read_between('1:1:', mbus.group_cursor('spark_archive'))"
        ).fetchone()
    assert got == [tuple(r) for r in want]
    assert marked == (50,)  # the group's cursor marks exactly the archived events
    dates = {(r.topic, r.date) for r in back.select("topic", "date").distinct().collect()}
    assert len(dates) >= 2 and {t for t, _ in dates} == {"orders", "users"}

    later = archive(spark, db_dsn, path, before=now + dt.timedelta(minutes=1))
    assert later.rows == 10
    assert read_archive(spark, path).count() == 60


def test_stats_counts_edits_exactly_once_across_runs(
    spark: Any, db_dsn: str, tmp_path: Path
) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute(
            "CREATE TABLE commits (id bigserial PRIMARY KEY, branch_id int NOT NULL DEFAULT 0, "
            "created_by text NOT NULL, object_id bigint NOT NULL)"
        )
    job = StatsJob(db_dsn, table="public.commits", checkpoint=str(tmp_path / "ckpt"))

    def edit(rows: list[tuple[str, int]]) -> None:
        with psycopg.connect(db_dsn) as conn:
            for user, obj in rows:
                conn.execute(
                    "INSERT INTO commits (created_by, object_id) VALUES (%s, %s)", (user, obj)
                )

    job.capture()
    edit([("ann", 1), ("bob", 1), ("ann", 2)])
    edit([("ann", 3)])
    with psycopg.connect(db_dsn) as conn:  # updates are not edits
        conn.execute("UPDATE commits SET branch_id = 1 WHERE id = 1")
    first = job.run(spark)
    edit([("bob", 2), ("cid", 2)])
    second = job.run(spark)
    assert (first.rows, second.rows) == (5, 2)
    with psycopg.connect(db_dsn) as conn:
        users = conn.execute(
            "SELECT user_name, edits FROM mbus.stats_user_edits ORDER BY 1"
        ).fetchall()
        objects = conn.execute(
            "SELECT object_id, sum(edits) FROM mbus.stats_object_activity GROUP BY 1 ORDER BY 1"
        ).fetchall()
        windows = conn.execute(
            "SELECT bool_and(window_end - window_start = interval '1 hour') "
            "FROM mbus.stats_object_activity"
        ).fetchone()
    assert users == [("ann", 3), ("bob", 2), ("cid", 1)]
    assert objects == [("1", 2), ("2", 3), ("3", 1)]
    assert windows == (True,)
