"""Spark fixtures: one local SparkSession for the whole test session (marker ``spark``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A ``local[2,2]`` session (a failed task is retried once) with ``pgmbus`` registered."""
    from pgmbus.spark.session import local_session

    session = local_session("pgmbus-tests", master="local[2,2]", fast_start=True)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in tests/spark is a Spark test."""
    for item in items:
        if "tests/spark/" in str(item.fspath):
            item.add_marker(pytest.mark.spark)
