"""Smoke test: every queue bench scenario runs end to end with a tiny size and reports a ratio."""

from __future__ import annotations

import pytest

from bench import harness
from pgmbus.testing.server import TestServer

SIZES = {
    "queue_throughput": 16,
    "queue_batch": 400,
    "queue_latency": 20,
    "selector_backlog": 600,
    "queue_soak": 1_000,
    "queue_soak_sql": 1_000,
    "queue_soak_cron": 1_000,
    "peer_pgqueuer": 20,
}


@pytest.mark.slow
@pytest.mark.parametrize("scenario", sorted(SIZES))
def test_queue_scenario_runs(pg_server: TestServer, scenario: str) -> None:
    """Each scenario of the issue exists, runs both sides, and yields positive rates."""
    module = harness.load(scenario)
    report = harness.run(module, pg_server.admin_dsn, size=SIZES[scenario], rounds=1)
    assert report.candidate.median > 0 and report.baseline.median > 0
    if scenario == "queue_latency":
        assert report.candidate.extra_medians()["p99_ms"] >= 0
