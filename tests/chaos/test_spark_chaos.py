"""A Spark streaming query into a table sink under faults (``make chaos`` only: Spark is slow
to start). One Spark session for the module."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.chaos.harness import ChaosCluster
from tests.chaos.scenarios import run_scenario
from tests.chaos.summary import record_and_check

pytest.importorskip("pyspark")

DURATION = float(os.environ.get("CHAOS_DURATION_S", "10"))

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.spark]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pgmbus.spark.session import local_session

    session = local_session("pgmbus-chaos", master="local[2]", fast_start=True)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fault", ["kill-9", "proxy-cuts"])
def test_spark_query_into_a_table_sink_under_fault(
    chaos_cluster: ChaosCluster, spark: Any, fault: str
) -> None:
    """Every acknowledged event lands in the sink table exactly once, though micro-batches
    fail (the query is restarted from its checkpoint)."""
    outcome = run_scenario(
        chaos_cluster,
        "spark",
        fault,
        duration=DURATION,
        rate=30.0,
        drain_timeout=120.0,
        spark=spark,
    )
    record_and_check(outcome)
    assert outcome.reports[0].faults_injected > 0
