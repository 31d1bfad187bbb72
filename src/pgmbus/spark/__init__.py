"""PySpark integration: the ``pgmbus`` data source, the exactly-once table sink, pipeline jobs.

pyspark is imported only inside this package (install the ``spark`` extra).
"""

from __future__ import annotations

from pgmbus.spark.session import local_session


def register(spark: object) -> None:
    """Make ``spark.read.format("pgmbus")`` (and the other directions) available in a session."""
    from pgmbus.spark.source import register as _register

    _register(spark)  # type: ignore[arg-type]


__all__ = ["local_session", "register"]
