"""The archive job: copy the log's events older than a horizon to Parquet, idempotently.

The job is a Structured Streaming query over a consumer group (``spark_archive`` by default)
run with ``availableNow``: the pgmbus source reads the events the group has not read yet that
were published before the horizon, Spark's Parquet sink writes them partitioned by topic and
date (``<path>/events/topic=<t>/date=<d>/``) and records the files it committed in its own log,
and the source's commit advances the group. The group's cursor is the mark of what is archived:
retention never drops what a live group has not read, so nothing is dropped before it is
archived, and a run interrupted at any point resumes from its checkpoint
(``<path>/_checkpoint``) without duplicates. Run it as ``pgmbus pipeline archive`` or with
``spark-submit`` on this file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgmbus.spark.jobs.progress import QueryReport, watch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Columns of the archive as written (topic and date are the partition directories).
ARCHIVE_DDL = (
    "id bigint, key string, payload string, headers string, published_at timestamp, "
    "topic string, date date"
)


def events_path(path: str) -> str:
    return str(Path(path) / "events")


def checkpoint_path(path: str) -> str:
    return str(Path(path) / "_checkpoint")


def archive(
    spark: SparkSession,
    dsn: str,
    path: str,
    *,
    before: dt.datetime,
    group: str = "spark_archive",
    topics: str | None = None,
    max_events_per_batch: int | None = None,
    on_batch: Callable[[dict[str, Any]], None] | None = None,
) -> QueryReport:
    """Archive every event published before ``before`` that the group has not archived yet.

    Parameters
    ----------
    spark:
        A session with the pgmbus data source registered.
    dsn:
        The database of the log.
    path:
        The archive's root folder (any Hadoop path Spark can write: local, HDFS, S3 ...).
    before:
        The horizon: only events published before it are archived in this run.
    group:
        The consumer group that marks what is archived (created at the log's beginning).
    topics:
        Comma-separated topics to archive; all by default.
    max_events_per_batch:
        Cap of each micro-batch (progress is reported per batch).
    on_batch:
        Called with each micro-batch's progress (a dict, Spark's ``StreamingQueryProgress``).
    """
    from pyspark.sql import functions as F

    if before.tzinfo is None:
        before = before.replace(tzinfo=dt.UTC)
    reader = (
        spark.readStream.format("pgmbus")
        .option("dsn", dsn)
        .option("group", group)
        .option("startingPosition", "beginning")
        .option("publishedBefore", before.isoformat())
    )
    if topics:
        reader = reader.option("topics", topics)
    if max_events_per_batch:
        reader = reader.option("maxEventsPerTrigger", str(max_events_per_batch))
    events = reader.load().withColumn("date", F.to_date("published_at"))
    query = (
        events.writeStream.format("parquet")
        .partitionBy("topic", "date")
        .option("path", events_path(path))
        .option("checkpointLocation", checkpoint_path(path))
        .trigger(availableNow=True)
        .queryName(f"pgmbus_archive_{group}")
        .start()
    )
    return watch(query, on_batch)


def read_archive(spark: SparkSession, path: str) -> DataFrame:
    """The archived events, with the source's columns (``id, topic, key, payload, headers,
    published_at``) and ``date``; only files the archive committed are read."""
    df = spark.read.schema(ARCHIVE_DDL).parquet(events_path(path))
    return df.select("id", "topic", "key", "payload", "headers", "published_at", "date")


def main(argv: list[str] | None = None) -> int:
    """``spark-submit archive.py --dsn ... --path ... --older-than-hours 24``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--older-than-hours", type=float, default=24.0)
    parser.add_argument("--group", default="spark_archive")
    parser.add_argument("--topics", default=None)
    args = parser.parse_args(argv)
    from pgmbus.spark.session import local_session

    spark = local_session("pgmbus-archive")
    before = dt.datetime.now(dt.UTC) - dt.timedelta(hours=args.older_than_hours)

    def show(progress: dict[str, Any]) -> None:
        print(f"batch {progress['batchId']}: {progress['numInputRows']} events", flush=True)

    report = archive(
        spark,
        args.dsn,
        args.path,
        before=before,
        group=args.group,
        topics=args.topics,
        on_batch=show,
    )
    print(f"archived {report.rows} events in {report.batches} batch(es) to {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
