"""The timers bench scenarios run end to end at a tiny size and report their numbers."""

from __future__ import annotations

import pytest

from bench import harness
from pgmbus.testing.server import TestServer


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["timers_lateness", "timers_create"])
def test_scenario_runs(pg_server: TestServer, scenario: str) -> None:
    module = harness.load(scenario)
    report = harness.run(module, pg_server.admin_dsn, size=40, rounds=1).as_dict()
    assert report["candidate_median_per_s"] > 0 and report["baseline_median_per_s"] > 0
    if scenario == "timers_lateness":
        for side in ("candidate_extra", "baseline_extra"):
            assert report[side]["delivered"] == 40
            assert report[side]["p99_ms"] >= report[side]["p50_ms"]
