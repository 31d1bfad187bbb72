"""Smoke test: every streams bench scenario runs with a tiny size and reports a ratio."""

from __future__ import annotations

import pytest

from bench import harness
from pgmbus.testing.server import TestServer


@pytest.mark.parametrize(
    ("scenario", "size"),
    [
        ("stream_publish", 200),
        ("stream_read", 1500),
        ("stream_long_tx", 20),
        ("subscription_fanout", 200),
    ],
)
def test_stream_scenarios_run(
    pg_server: TestServer, monkeypatch: pytest.MonkeyPatch, scenario: str, size: int
) -> None:
    monkeypatch.setenv("PGMBUS_BENCH_LONG_TX_HOLD", "0.4")
    report = harness.run(harness.load(scenario), pg_server.admin_dsn, size=size, rounds=1)
    data = report.as_dict()
    assert data["candidate_median_per_s"] > 0 and data["baseline_median_per_s"] > 0
    assert data["ratio"] > 0
