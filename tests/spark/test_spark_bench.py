"""The Spark bench scenarios run end to end with a tiny size (numbers are not checked)."""

from __future__ import annotations

from typing import Any

import pytest

from bench import harness
from pgmbus.testing.server import TestServer


@pytest.mark.parametrize("scenario", ["spark_read", "spark_write"])
def test_spark_scenario_runs(spark: Any, pg_server: TestServer, scenario: str) -> None:
    if "postgresql.jar" not in (spark.conf.get("spark.jars", "") or ""):
        pytest.skip("the JDBC driver (libpostgresql-jdbc-java) was not there at session start")
    report = harness.run(harness.load(scenario), pg_server.admin_dsn, size=300, rounds=1)
    data = report.as_dict()
    assert data["candidate_median_per_s"] > 0 and data["baseline_median_per_s"] > 0
    assert data["size"] == 300
