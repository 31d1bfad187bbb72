"""Spark: read the log with format("pgmbus"), archive it to Parquet, keep edit statistics."""

from __future__ import annotations

import datetime as dt
import random
import time
from pathlib import Path

import psycopg
from rich.console import Console
from rich.table import Table

console = Console()
HOME = Path(".pgmbus") / "spark-demo"


def _activity(dsn: str) -> None:
    """Edits by a few users (a captured table) and old order events for the archive."""
    rng = random.Random()
    users = ["ann", "bob", "cid", "dan", "eve"]
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS public.demo_spark_edits (id bigserial PRIMARY KEY, "
            "branch_id int NOT NULL DEFAULT 0, created_by text NOT NULL, "
            "object_id bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"
        )
        conn.commit()
    from pgmbus.spark.jobs.stats import StatsJob

    StatsJob(dsn, table="public.demo_spark_edits", group="spark_demo_stats").capture()
    with psycopg.connect(dsn) as conn:
        for _ in range(20):  # 20 transactions of 10 to 30 edits each
            for _ in range(rng.randint(10, 30)):
                conn.execute(
                    "INSERT INTO public.demo_spark_edits (created_by, object_id) VALUES (%s, %s)",
                    (rng.choice(users[: rng.randint(1, 5)]), rng.randint(1, 12)),
                )
            conn.commit()
        conn.execute(
            "INSERT INTO mbus.events (topic, key, payload, published_at) "
            "SELECT 'demo.orders', 'c' || (g %% 17), "
            "jsonb_build_object('order', g, 'amount', (g * 37) %% 500), "
            "now() - interval '3 days' + g * interval '1 minute' "
            "FROM generate_series(1, %s) AS g",
            (2000,),
        )
        conn.commit()
    console.print(
        "generated 20 transactions of edits on public.demo_spark_edits (captured) "
        "and 2,000 order events from 3 days ago"
    )


def _home(dsn: str) -> Path:
    """The demo's Spark files (checkpoints, archive) for this cluster and database.

    Checkpoints name offsets of consumer groups in one database: a run against another
    cluster (after `pgmbus dev destroy`) must not resume from them.
    """
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT system_identifier::text || '-' || current_database() FROM pg_control_system()"
        ).fetchone()
    assert row is not None
    return HOME / str(row[0])


def run(dsn: str) -> None:
    started = time.monotonic()
    home = _home(dsn)
    _activity(dsn)
    from pyspark.sql import functions as F

    from pgmbus.spark import local_session
    from pgmbus.spark.jobs.archive import archive, read_archive
    from pgmbus.spark.jobs.stats import StatsJob

    console.print("starting local Spark (local[2]) ...")
    spark = local_session("pgmbus-demo", fast_start=True)
    spark.sparkContext.setLogLevel("ERROR")

    console.print('[bold]spark.read.format("pgmbus")[/]: order events by customer key')
    orders = spark.read.format("pgmbus").option("dsn", dsn).option("topics", "demo.orders").load()
    top = (
        orders.groupBy("key")
        .agg(
            F.count("*").alias("events"),
            F.sum(F.get_json_object("payload", "$.amount").cast("int")).alias("amount"),
        )
        .orderBy(F.desc("amount"))
        .limit(3)
        .collect()
    )
    for row in top:
        console.print(f"  {row.key}: {row.events} events, amount {row.amount}")

    console.print("[bold]pipeline stats[/]: captured edits -> mbus.stats_* (exactly once)")
    job = StatsJob(
        dsn,
        table="public.demo_spark_edits",
        group="spark_demo_stats",
        checkpoint=str(home / "stats-checkpoint"),
    )
    report = job.run(spark)
    console.print(f"  processed {report.rows} change events in {report.batches} batch(es)")
    with psycopg.connect(dsn) as conn:
        users = conn.execute(
            "SELECT user_name, edits, last_edit_at FROM mbus.stats_user_edits "
            "ORDER BY edits DESC LIMIT 5"
        ).fetchall()
        busiest = conn.execute(
            "SELECT object_id, window_start, edits FROM mbus.stats_object_activity "
            "ORDER BY edits DESC, object_id LIMIT 3"
        ).fetchall()
    table = Table("user", "edits", "last edit (UTC)")
    for name, edits, last in users:
        table.add_row(name, str(edits), f"{last:%H:%M:%S}")
    console.print(table)
    for obj, start, edits in busiest:
        console.print(f"  object {obj}: {edits} edits in the hour from {start:%H:%M}")

    console.print("[bold]pipeline archive[/]: events older than 1 day -> Parquet")
    path = str(home / "archive")
    horizon = dt.datetime.now(dt.UTC) - dt.timedelta(days=1)
    done = archive(spark, dsn, path, before=horizon, topics="demo.orders")
    held = (
        read_archive(spark, path)
        .agg(F.count("*").alias("events"), F.countDistinct("date").alias("dates"))
        .first()
    )
    console.print(
        f"  archived {done.rows} events now; the archive at {path} holds "
        f"{held.events} events in {held.dates} date partition(s)"
    )
    spark.stop()
    console.print(f"spark part done in {time.monotonic() - started:.0f} s")
