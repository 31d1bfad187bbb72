"""The chaos workloads through two failovers in a row (`make chaos`), with a synchronous and
with an asynchronous standby: the primary's postmaster and keeper are killed (-9), the standby
is promoted, the load keeps running, the old primary rejoins as the standby, and again.

Synchronous: nothing acknowledged is lost, exactly-once paths have no duplicate, stream groups
are gap-free. Asynchronous: the same workloads, recorded (what a lost WAL tail costs) without
the promise. The table of every run goes to .chaos/ha-summary.md (docs/guarantees.md quotes it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgmbus.testing.chaos import Report, format_table
from tests.chaos.scenarios import run_scenario
from tests.ha.harness import HAChaosCluster

pytestmark = [pytest.mark.chaos]

# two failovers and one rejoin take 15-40 s on 2 busy cores; the load runs the whole time
DURATION = float(os.environ.get("CHAOS_HA_DURATION_S", "50"))
SUMMARY = Path(".chaos") / "ha-summary.md"
REPORTS: list[Report] = []
NOTES: list[str] = []


@pytest.fixture(scope="module", params=["sync", "async"])
def mode_cluster(request: pytest.FixtureRequest) -> Iterator[HAChaosCluster]:
    cluster = HAChaosCluster(synchronous=request.param == "sync").start()
    try:
        yield cluster
    finally:
        cluster.stop()
        SUMMARY.parent.mkdir(exist_ok=True)
        SUMMARY.write_text(format_table(REPORTS) + "\n\n" + "\n".join(f"- {n}" for n in NOTES))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("engine", ["queue", "stream", "timers", "serve", "worker", "dispatcher"])
def test_two_failovers_under_load(mode_cluster: HAChaosCluster, engine: str) -> None:
    mode = mode_cluster.mode
    before = len(mode_cluster.failovers)
    outcome = run_scenario(mode_cluster, engine, "failover-twice", duration=DURATION)
    failovers = mode_cluster.failovers[before:]
    for report in outcome.reports:
        report.fault = f"2 failovers ({mode})"
    REPORTS.extend(outcome.reports)
    NOTES.append(
        f"{engine} ({mode}): failovers "
        + ", ".join(f"{f.to_primary_s} s to a primary, {f.rejoined_s} s back" for f in failovers)
        + f"; longest time without an acknowledged write {outcome.notes['max_ack_gap_s']}"
        + f"; longest time without a delivery {outcome.notes['max_gap_s']}"
    )
    assert len(failovers) == 2, "both failovers happened during the load"
    assert not outcome.crashed, outcome.crashed
    assert not outcome.fault_errors, outcome.fault_errors
    assert outcome.notes["drained"], outcome.notes
    assert all(f.to_primary_s < 30 for f in failovers), failovers
    if mode == "sync":
        for report in outcome.reports:
            assert report.acknowledged > 0, report
            assert report.valid, (report, report.examples, outcome.notes)
