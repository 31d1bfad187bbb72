"""A job that builds its own SparkSession with Spark's defaults, as a user would, then reads."""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

import pgmbus.spark

KEY = "spark.sql.python.filterPushdown.enabled"


def ids(spark: SparkSession, dsn: str, where: str) -> list[int]:
    df = spark.read.format("pgmbus").option("dsn", dsn).load()
    return sorted(row.id for row in df.where(where).collect())


def main(dsn: str) -> None:
    spark = SparkSession.builder.master("local[1]").appName("user-job").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    report: dict[str, object] = {"before": spark.conf.get(KEY)}
    report["pushed"] = pgmbus.spark.register(spark)
    report["after"] = spark.conf.get(KEY)
    report["all"] = ids(spark, dsn, "true")
    report["filtered"] = ids(spark, dsn, "topic = 'a' AND id > 2")
    spark.conf.set(KEY, "false")  # a session where the user keeps push-down off
    report["plain_pushed"] = pgmbus.spark.register(spark, pushdown=False)
    report["plain_after"] = spark.conf.get(KEY)
    report["plain_filtered"] = ids(spark, dsn, "topic = 'a' AND id > 2")
    spark.stop()
    print("REPORT " + json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
