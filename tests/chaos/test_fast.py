"""The chaos suite's fast tier: one fault per engine, in the default test run."""

from __future__ import annotations

import pytest

from tests.chaos.harness import ChaosCluster
from tests.chaos.scenarios import run_scenario
from tests.chaos.summary import NOTES, REPORTS


def _assert_sound(outcome: object) -> None:
    from tests.chaos.scenarios import Outcome

    assert isinstance(outcome, Outcome)
    REPORTS.extend(outcome.reports)
    NOTES.append(f"{outcome.reports[0].fault}: {outcome.notes}")
    assert not outcome.crashed, f"workload threads died: {outcome.crashed}"
    assert outcome.notes["drained"], f"consumers did not drain: {outcome.notes}"
    for report in outcome.reports:
        assert report.acknowledged > 0, report
        assert report.valid, (report, report.examples, outcome.notes)


@pytest.mark.timeout(90)
def test_queues_survive_ambiguous_commits_and_cuts(chaos_cluster: ChaosCluster) -> None:
    outcome = run_scenario(chaos_cluster, "queue", "ambiguous-commit", duration=5.0)
    _assert_sound(outcome)
    assert (
        outcome.notes["proxy"]["ambiguous_commits"] + outcome.notes["proxy"]["ambiguous_statements"]
        > 0
    ), "the fault happened"


@pytest.mark.timeout(90)
def test_streams_survive_kill_9_of_the_postmaster(chaos_cluster: ChaosCluster) -> None:
    outcome = run_scenario(chaos_cluster, "stream", "kill-9", duration=6.0)
    _assert_sound(outcome)
    assert chaos_cluster.kills >= 1
    assert outcome.notes["worker"]["reconnects"] >= 1, "the stream worker reconnected"
