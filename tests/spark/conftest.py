"""Spark fixtures: one local SparkSession for the whole test session (marker ``spark``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A ``local[2,2]`` session (a failed task is retried once) with ``pgmbus`` registered."""
    from pathlib import Path

    from pgmbus.spark.session import local_session

    jar = Path("/usr/share/java/postgresql.jar")  # the JDBC baseline of the bench smoke tests
    conf = {"spark.jars": str(jar)} if jar.exists() else {}
    session = local_session("pgmbus-tests", master="local[2,2]", fast_start=True, conf=conf)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# A test cut short by pytest-timeout in the middle of a py4j call leaves the session's gateway
# out of step (every later Spark test of the process then fails with py4j protocol errors), so
# Spark tests get a long budget: on 2 cores shared with the other test processes a Spark job
# can take minutes where it takes seconds alone.
SPARK_TIMEOUT_S = 600


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in tests/spark is a Spark test, with the Spark time budget."""
    for item in items:
        if "tests/spark/" in str(item.fspath):
            item.add_marker(pytest.mark.spark)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(SPARK_TIMEOUT_S))


def publish(dsn: str, topic: str, n: int, *, start: int = 0, keys: int = 7) -> None:
    """Publish ``n`` events on ``topic`` in one committed transaction."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        conn.execute(
            "SELECT mbus.publish(%s, jsonb_build_object('n', g), 'k' || (g %% %s), "
            "CASE WHEN g %% 3 = 0 THEN jsonb_build_object('h', g) END) "
            "FROM generate_series(%s::int, %s::int) AS g",
            (topic, keys, start, start + n - 1),
        )


def read_sql(dsn: str, start: str, end: str, topics: list[str] | None = None) -> list[Any]:
    """The streams engine's own answer for a range: ``mbus.read_between``."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT id, topic, key, payload, headers, published_at "
            "FROM mbus.read_between(%s, %s, %s) ORDER BY id",
            (start, end, topics),
        ).fetchall()


def cursor_now(dsn: str) -> str:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT mbus.current_cursor()").fetchone()
    assert row is not None
    return str(row[0])
