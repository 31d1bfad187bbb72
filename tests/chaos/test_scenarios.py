"""The full chaos matrix (``make chaos``): every engine's workloads under every fault."""

from __future__ import annotations

import os

import pytest

from tests.chaos.harness import ChaosCluster
from tests.chaos.scenarios import FAULTS, PROCESS_FAULTS, run_scenario
from tests.chaos.summary import record_and_check

DURATION = float(os.environ.get("CHAOS_DURATION_S", "10"))

pytestmark = [pytest.mark.chaos, pytest.mark.slow]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("engine", ["queue", "stream", "timers"])
def test_engine_under_fault(chaos_cluster: ChaosCluster, engine: str, fault: str) -> None:
    outcome = run_scenario(chaos_cluster, engine, fault, duration=DURATION)
    record_and_check(outcome)
    if fault == "terminate-listeners":
        # wake-ups resume: a terminated listener costs latency, never loss
        gaps = outcome.notes["max_gap_s"]
        assert gaps and max(gaps.values()) < 3.0, gaps


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fault", list(PROCESS_FAULTS))
def test_worker_processes_under_fault(chaos_cluster: ChaosCluster, fault: str) -> None:
    """`pgmbus worker` processes killed (-9) or frozen (SIGSTOP past the lease) mid-handler:
    at least once, nothing lost."""
    outcome = run_scenario(chaos_cluster, "worker", fault, duration=DURATION)
    record_and_check(outcome)
    assert outcome.reports[0].faults_injected > 0
    if fault == "kill-worker":
        assert outcome.notes["worker"]["processes_started"] > 2, "killed workers were restarted"
