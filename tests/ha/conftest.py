"""The HA tests' cluster: a pg_auto_failover monitor and two nodes, synchronous standby,
pg_auto_failover's timeouts shortened (pgmbus.testing.ha.FAST_MONITOR_SETTINGS), fsync off
(a kill -9 keeps the page cache: what the standby acknowledged stays on it)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.ha.harness import HAChaosCluster


def _have_pg_autoctl() -> bool:
    return shutil.which("pg_autoctl") is not None


@pytest.fixture(scope="session")
def ha_cluster() -> Iterator[HAChaosCluster]:
    if not _have_pg_autoctl():
        pytest.fail("pg_autoctl is missing: scripts/bootstrap.sh installs pg_auto_failover")
    cluster = HAChaosCluster(synchronous=True, ephemeral=True).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each HA test starts or kills servers of a three-server setup: out of the fast tier."""
    for item in items:
        if "tests/ha/" in str(item.fspath):
            item.add_marker(pytest.mark.slow)
