"""A local SparkSession configured the way the pgmbus data source needs it."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Options every pgmbus session gets (small machine, UTC, no UI, Python filter push-down on).
BASE_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
}

#: Driver JVM options that shorten short runs (tests, demo): no C2 compiler, serial GC.
FAST_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def prepare_environment() -> None:
    """Make Spark's Python workers run this interpreter (so they can import pgmbus).

    Spark starts workers with ``python3`` from ``PATH`` unless told otherwise; that interpreter
    usually lacks pgmbus and pyarrow. Must run before the session's JVM starts.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def local_session(
    app_name: str = "pgmbus",
    *,
    master: str = "local[2]",
    fast_start: bool = False,
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """Return a SparkSession with the pgmbus data source registered.

    Parameters
    ----------
    app_name:
        The Spark application name.
    master:
        The master URL; ``local[2]`` by default. ``local[2,2]`` retries each failed task once.
        Under ``spark-submit`` the master given there wins (the builder does not override it).
    fast_start:
        Add :data:`FAST_START_JAVA_OPTIONS` to the driver (good for short jobs and tests).
    conf:
        More Spark options, applied last.
    """
    prepare_environment()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if not _submitted():
        builder = builder.master(master)
    for key, value in BASE_CONF.items():
        builder = builder.config(key, value)
    if fast_start:
        builder = builder.config("spark.driver.extraJavaOptions", FAST_START_JAVA_OPTIONS)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    from pgmbus.spark.source import register

    register(spark)
    return spark


def _submitted() -> bool:
    """True when running under ``spark-submit`` (which sets the master itself)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ
