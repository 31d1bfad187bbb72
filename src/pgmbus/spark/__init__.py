"""PySpark integration: the ``pgmbus`` data source, the exactly-once table sink, pipeline jobs.

pyspark is imported only inside this package (install the ``spark`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pgmbus.spark.session import local_session

if TYPE_CHECKING:
    from pgmbus.spark.jobs.archive import archive
    from pgmbus.spark.jobs.stats import StatsJob


def register(spark: object, *, pushdown: bool = True) -> bool:
    """Make ``spark.read.format("pgmbus")`` (and the other directions) available in a session.

    Parameters
    ----------
    spark:
        A ``SparkSession``, built with Spark's defaults or with ``local_session``.
    pushdown:
        Push ``topic``/``key``/``id``/``published_at`` filters into PostgreSQL: turns on
        ``spark.sql.python.filterPushdown.enabled`` in the session when it is off (Spark's
        default). False, or a session where the option cannot be changed, registers a reader
        that pushes nothing and lets Spark filter.

    Returns
    -------
    bool
        Whether filters are pushed down.
    """
    from pgmbus.spark.source import register as _register

    return _register(spark, pushdown=pushdown)  # type: ignore[arg-type]


def __getattr__(name: str) -> Any:
    """The pipeline jobs (``pgmbus pipeline``), loaded on first use: they bring pyarrow, which
    ``import pgmbus.spark`` does not need."""
    if name == "archive":
        from pgmbus.spark.jobs.archive import archive

        return archive
    if name == "StatsJob":
        from pgmbus.spark.jobs.stats import StatsJob

        return StatsJob
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["StatsJob", "archive", "local_session", "register"]
