"""Smoke tests: the dependency bench scenarios run end to end with a tiny size."""

from __future__ import annotations

from bench import harness
from pgmbus.testing.server import TestServer


def test_dependency_backlog_runs(pg_server: TestServer) -> None:
    """dependency_backlog exists, runs both sides, and counts its waiting messages."""
    module = harness.load("dependency_backlog")
    report = harness.run(module, pg_server.admin_dsn, size=300, rounds=1)
    assert report.candidate.median > 0 and report.baseline.median > 0
    assert report.candidate.extra_medians()["waiting"] == 300


def test_dependency_cycle_runs(pg_server: TestServer) -> None:
    """dependency_cycle exists and runs both sides: every waiting message is released by the
    consume of the message it waits for (the scenario asserts each consume finds one)."""
    module = harness.load("dependency_cycle")
    report = harness.run(module, pg_server.admin_dsn, size=20, rounds=1)
    assert report.candidate.median > 0 and report.baseline.median > 0
