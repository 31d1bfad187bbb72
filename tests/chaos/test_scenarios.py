"""The full chaos matrix (``make chaos``): every engine's workloads under every fault."""

from __future__ import annotations

import os

import pytest

from tests.chaos.harness import ChaosCluster
from tests.chaos.scenarios import FAULTS, XMIN_HOLD_S, run_scenario
from tests.chaos.summary import record_and_check

DURATION = float(os.environ.get("CHAOS_DURATION_S", "10"))

pytestmark = [pytest.mark.chaos, pytest.mark.slow]


@pytest.mark.timeout(180 + XMIN_HOLD_S)
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
@pytest.mark.parametrize(
    ("engine", "fault"),
    [
        ("worker", "kill-worker"),
        ("worker", "stop-worker"),
        ("app", "kill-worker"),
        ("app", "stop-worker"),
        ("app", "mixed"),
        ("app", "timeouts"),
        ("dispatcher", "kill-worker"),
        ("dispatcher", "stop-worker"),
        ("dispatcher", "mixed"),
    ],
)
def test_processes_under_fault(chaos_cluster: ChaosCluster, engine: str, fault: str) -> None:
    """Real processes killed (-9) or frozen (SIGSTOP past their lease, then SIGCONT)
    mid-handler, each restarted by pid: `pgmbus worker` with a function (engine worker) or an
    app of queue and stream handlers (app), `pgmbus dispatcher` (dispatcher). At least once
    for queues and timers, exactly once and ordered for streams, nothing lost."""
    outcome = run_scenario(chaos_cluster, engine, fault, duration=DURATION)
    record_and_check(outcome)
    assert outcome.reports[0].faults_injected > 0
    started = outcome.notes["worker"]["processes_started"]
    if fault in ("kill-worker", "mixed"):
        assert started > 2, "killed processes were restarted"
    else:
        assert started == 2, "no process died: each one recovered by itself"
    if fault in ("mixed", "timeouts"):
        assert outcome.notes["worker"]["logged_warnings"] > 0, "the processes logged the faults"


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fault", ["proxy-cuts", "kill-9", "ambiguous-commit"])
def test_serve_under_fault(chaos_cluster: ChaosCluster, fault: str) -> None:
    """HTTP clients post (iids, retried) and lease/ack through `pgmbus serve` while its
    database connections are cut or the postmaster is killed: the service recovers by itself
    (never restarted) and nothing acknowledged is lost."""
    outcome = run_scenario(chaos_cluster, "serve", fault, duration=DURATION)
    record_and_check(outcome)
    assert outcome.reports[0].faults_injected > 0
    assert outcome.notes["worker"]["processes_started"] == 1, "serve never needed a restart"
    assert outcome.notes["worker"]["logged_warnings"] > 0, "serve logged what happened"
