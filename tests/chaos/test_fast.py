"""The chaos suite's fast tier: one fault per engine, in the default test run."""

from __future__ import annotations

import pytest

from tests.chaos.harness import ChaosCluster
from tests.chaos.scenarios import run_scenario
from tests.chaos.summary import record_and_check


@pytest.mark.timeout(90)
def test_queues_survive_ambiguous_commits(chaos_cluster: ChaosCluster) -> None:
    outcome = run_scenario(chaos_cluster, "queue", "ambiguous-commit", duration=5.0)
    record_and_check(outcome)
    proxy = outcome.notes["proxy"]
    assert proxy["ambiguous_commits"] + proxy["ambiguous_statements"] > 0, "the fault happened"
    assert outcome.notes["worker"]["reconnects"] > 0, "the queue worker lived through it"


@pytest.mark.timeout(90)
def test_streams_survive_kill_9_of_the_postmaster(chaos_cluster: ChaosCluster) -> None:
    outcome = run_scenario(chaos_cluster, "stream", "kill-9", duration=6.0)
    record_and_check(outcome)
    assert chaos_cluster.kills >= 1
    assert outcome.notes["worker"]["reconnects"] >= 1, "the stream worker reconnected"
