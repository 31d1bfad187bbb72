"""The Spark writer's exactly-once state across a failover: the promoted standby has the
logged ledger, published rows and pending events, and empty unlogged staging tables (they are
not replicated; see tests/spark/lost_staging.py)."""

from __future__ import annotations

import pytest

from tests.ha.harness import HAChaosCluster

pytest.importorskip("pyspark")

# a heal and a failover take 20-40 s: `make chaos`; tests/spark/test_spark_server_crash.py is
# the kill -9 variant in the default run
pytestmark = pytest.mark.chaos


@pytest.mark.timeout(180)
def test_a_failover_loses_no_committed_batch_and_publishes_no_short_one(
    ha_cluster: HAChaosCluster,
) -> None:
    from tests.spark.lost_staging import check_exactly_once_across

    ha_cluster.heal()  # a streaming standby to fail over to
    dsn = ha_cluster.new_database()

    def failover() -> str:
        done = ha_cluster.failover(rejoin=False)
        assert done.promoted != done.killed
        return dsn  # the multi-host DSN finds the new primary

    check_exactly_once_across(dsn, failover)
