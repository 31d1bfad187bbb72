"""PySpark integration: the ``pgmbus`` data source, the exactly-once table sink, pipeline jobs.

pyspark is imported only inside this package (install the ``spark`` extra).
"""

from __future__ import annotations

from pgmbus.spark.session import local_session


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


__all__ = ["local_session", "register"]
