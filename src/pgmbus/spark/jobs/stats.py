"""The stats job: edit statistics from captured table changes, kept in PostgreSQL exactly once.

The Wiki PubSub consumers on Spark: a table of edits (commits) is captured by the streams engine
(``mbus.capture_table``), the job reads its change events through a consumer group, and each
micro-batch adds to two tables in one transaction with the batch's ledger claim:

* ``mbus.stats_user_edits``: edits and last edit time per user;
* ``mbus.stats_object_activity``: edits per object per time window.

The counters are increments (``edits = edits + new``), so a replayed batch would double them;
the ledger claim in the same transaction is what makes them exactly once. Run it as
``pgmbus pipeline stats`` or with ``spark-submit`` on this file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgmbus.data.spark import SPARK
from pgmbus.errors import ConfigurationError, translating
from pgmbus.spark.jobs.progress import QueryReport, watch
from pgmbus.spark.sink import exactly_once, query_id_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass
class StatsJob:
    """The job's settings; ``run`` starts it."""

    dsn: str
    table: str = "public.commits"
    user_column: str = "created_by"
    object_column: str = "object_id"
    window: dt.timedelta = dt.timedelta(hours=1)
    group: str = "spark_stats"
    checkpoint: str = ".pgmbus/spark/stats"
    topic: str | None = None

    @property
    def sink(self) -> str:
        return f"stats:{self.group}"

    def capture(self) -> str:
        """Make sure the table is captured; return its topic."""
        import psycopg

        queries = SPARK
        params = {"table": self.table, "topic": self.topic}
        with psycopg.connect(self.dsn) as conn, translating():
            row = conn.execute(queries["capture_topic"], params).fetchone()
            if row is None:
                conn.execute(queries["capture_table"], params)
                row = conn.execute(queries["capture_topic"], params).fetchone()
            conn.commit()
        if row is None:
            raise ConfigurationError(f"could not capture {self.table}")
        return str(row[0])

    def edits(self, changes: DataFrame) -> DataFrame:
        """Inserted rows of the captured table as ``(user_name, object_id, published_at)``."""
        from pyspark.sql import functions as F

        new = "$.row."
        return changes.where(F.get_json_object("payload", "$.op") == F.lit("insert")).select(
            F.get_json_object("payload", new + self.user_column).alias("user_name"),
            F.get_json_object("payload", new + self.object_column).alias("object_id"),
            F.col("published_at"),
        )

    def process(self, changes: DataFrame, batch_id: int) -> None:
        """The ``foreachBatch`` function: aggregate the batch, add it to the tables once."""
        from pyspark.sql import functions as F

        edits = self.edits(changes).cache()
        try:
            users = (
                edits.where(F.col("user_name").isNotNull())
                .groupBy("user_name")
                .agg(F.count("*").alias("edits"), F.max("published_at").alias("last_edit_at"))
                .toArrow()
            )
            seconds = int(self.window.total_seconds())
            objects = (
                edits.where(F.col("object_id").isNotNull())
                .groupBy("object_id", F.window("published_at", f"{seconds} seconds"))
                .agg(F.count("*").alias("edits"))
                .select(
                    "object_id",
                    F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"),
                    "edits",
                )
                .toArrow()
            )
        finally:
            edits.unpersist()
        with exactly_once(self.dsn, self.sink, query_id_of(changes), batch_id) as writer:
            if writer is None:
                return
            writer.upsert(
                "mbus.stats_user_edits",
                users,
                ["user_name"],
                combine={"edits": "add", "last_edit_at": "greatest"},
            )
            writer.upsert(
                "mbus.stats_object_activity",
                objects,
                ["object_id", "window_start"],
                combine={"edits": "add"},
            )

    def run(
        self,
        spark: SparkSession,
        *,
        follow: bool = False,
        on_batch: Callable[[dict[str, Any]], None] | None = None,
        timeout: float | None = None,
    ) -> QueryReport:
        """Run until caught up (``follow=False``: ``availableNow``) or until stopped."""
        topic = self.capture()
        changes = (
            spark.readStream.format("pgmbus")
            .option("dsn", self.dsn)
            .option("group", self.group)
            .option("topics", topic)
            .option("startingPosition", "beginning")
            .load()
        )
        writer = (
            changes.writeStream.foreachBatch(self.process)
            .option("checkpointLocation", self.checkpoint)
            .queryName(f"pgmbus_stats_{self.group}")
        )
        writer = (
            writer.trigger(availableNow=True)
            if not follow
            else writer.trigger(processingTime="1 second")
        )
        return watch(writer.start(), on_batch, timeout=timeout)


def main(argv: list[str] | None = None) -> int:
    """``spark-submit stats.py --dsn ... --table public.commits [--follow]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--table", default="public.commits")
    parser.add_argument("--user-column", default="created_by")
    parser.add_argument("--object-column", default="object_id")
    parser.add_argument("--window-minutes", type=float, default=60.0)
    parser.add_argument("--group", default="spark_stats")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--follow", action="store_true")
    args = parser.parse_args(argv)
    from pgmbus.spark.session import local_session

    job = StatsJob(
        args.dsn,
        table=args.table,
        user_column=args.user_column,
        object_column=args.object_column,
        window=dt.timedelta(minutes=args.window_minutes),
        group=args.group,
        checkpoint=args.checkpoint,
    )
    report = job.run(local_session("pgmbus-stats"), follow=args.follow)
    print(f"processed {report.rows} change events in {report.batches} batch(es)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
