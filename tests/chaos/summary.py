"""The reports of a chaos run, gathered for the summary table printed at the end."""

from __future__ import annotations

from pathlib import Path

from pgmbus.testing.chaos import Report
from tests.chaos.scenarios import Outcome

REPORTS: list[Report] = []
THREAD_DEATHS: list[str] = []  # threads of the test process that died of an exception
NOTES: list[str] = []
SUMMARY = Path(".chaos") / "summary.md"


def record_and_check(outcome: Outcome) -> None:
    """Keep the outcome for the summary, then assert what every scenario must show."""
    REPORTS.extend(outcome.reports)
    NOTES.append(f"{outcome.notes['engine']} under {outcome.reports[0].fault}: {outcome.notes}")
    assert not outcome.crashed, f"workload threads died: {outcome.crashed}"
    assert not THREAD_DEATHS, f"threads died silently: {THREAD_DEATHS}"
    assert not outcome.fault_errors, f"the fault injector failed: {outcome.fault_errors}"
    assert outcome.notes["drained"], f"consumers did not drain: {outcome.notes}"
    for report in outcome.reports:
        assert report.acknowledged > 0, report
        assert report.valid, (report, report.examples, outcome.notes)
