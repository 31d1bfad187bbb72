"""A driver for the standalone-cluster test: the data source and the jobs on ``spark://``.

Usage: python cluster_driver.py MASTER_URL DSN WORKDIR ROWS. Writes ROWS events to topic
``cluster.out`` (``write.format("pgmbus")``), reads them back (``read.format("pgmbus")``),
streams them into topic ``cluster.copy`` through a group in several micro-batches
(``readStream``/``writeStream``), runs the archive and stats jobs, and prints one JSON line of
what it saw for the test to check against SQL.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys

from pgmbus.spark.jobs.archive import archive, read_archive
from pgmbus.spark.jobs.stats import StatsJob
from pgmbus.spark.session import local_session


def main() -> None:
    url, dsn, workdir, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    fast = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    spark = local_session(
        "pgmbus-cluster-test",
        master=url,
        fast_start=True,
        conf={
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.cores": "1",
            "spark.cores.max": "2",
            "spark.executor.memory": "512m",
            "spark.executor.extraJavaOptions": fast,
            "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
            "spark.executorEnv.PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            "spark.task.maxFailures": "2",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    from pyspark.sql import functions as F

    out: dict[str, object] = {"master": spark.sparkContext.master}
    # tasks run in the executors, not in the driver: the pids of the Python workers
    pids = spark.sparkContext.parallelize(range(8), 8).map(lambda _: os.getppid()).collect()
    out["task_parent_pids"] = sorted(set(pids))
    out["driver_pid"] = os.getpid()

    df = spark.range(0, rows, numPartitions=4).select(
        F.concat(F.lit("k"), (F.col("id") % 10).cast("string")).alias("key"),
        F.to_json(F.struct(F.col("id").alias("n"))).alias("payload"),
    )
    df.write.format("pgmbus").option("dsn", dsn).option("topic", "cluster.out").mode(
        "append"
    ).save()

    back = (
        spark.read.format("pgmbus")
        .option("dsn", dsn)
        .option("numPartitions", 4)
        .load()
        .where(F.col("topic") == "cluster.out")
    )
    out["read_ids"] = sorted(r.id for r in back.select("id").collect())

    stream = (
        spark.readStream.format("pgmbus")
        .option("dsn", dsn)
        .option("group", "cluster_copy")
        .option("topics", "cluster.out")
        .option("startingPosition", "beginning")
        .option("maxEventsPerTrigger", str(max(1, rows // 3)))
        .load()
        .select("key", "payload")
    )
    query = (
        stream.writeStream.format("pgmbus")
        .option("dsn", dsn)
        .option("topic", "cluster.copy")
        .option("checkpointLocation", os.path.join(workdir, "copy-ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    out["stream_batches"] = len(query.recentProgress)

    report = archive(
        spark,
        dsn,
        os.path.join(workdir, "archive"),
        before=dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1),
    )
    out["archived"] = report.rows
    out["archive_read"] = read_archive(spark, os.path.join(workdir, "archive")).count()

    stats = StatsJob(dsn, table="public.commits", checkpoint=os.path.join(workdir, "stats"))
    out["stats_rows"] = stats.run(spark).rows
    spark.stop()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
