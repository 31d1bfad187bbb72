"""``python -m bench jobs`` end to end, tiny: pgmbus's worker and PgQueuer (no extra server)."""

from __future__ import annotations

import json

import pytest

from bench.__main__ import main
from pgmbus.testing.server import TestServer

pytest.importorskip("pgqueuer")


def test_jobs_scenario_measures_each_side(pg_server: TestServer, capsys: object) -> None:
    argv = ["jobs", "--dsn", pg_server.admin_dsn, "--sides", "pgmbus,pgqueuer", "--jobs", "200"]
    argv += ["--rounds", "1", "--latency-jobs", "100"]
    assert main(argv) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    (report,) = json.loads(out[out.index("[\n") :])
    assert report["scenario"] == "jobs" and report["jobs"] == 200
    sides = {s["side"]: s for s in report["sides"]}
    assert set(sides) == {"pgmbus", "pgqueuer"}
    for side in sides.values():
        assert side["drain_per_s"] > 0 and side["enqueue_one_per_s"] > 0
        assert side["enqueue_batch_per_s"] > 0 and side["cpu_ms_per_job"] > 0
        assert 0 <= side["latency_p50_ms"] <= side["latency_p99_ms"]
        assert side["duplicates"] == 0
    # both enqueue in the caller's transaction: a rolled-back job never runs
    assert sides["pgmbus"]["rolled_back_ran"] == 0 and sides["pgqueuer"]["rolled_back_ran"] == 0
    assert sides["pgqueuer"]["drain_ratio_pgmbus_to_side"] == pytest.approx(
        sides["pgmbus"]["drain_per_s"] / sides["pgqueuer"]["drain_per_s"]
    )
    assert sides["pgmbus"]["statements_per_job"] > 0
    assert sides["pgmbus"]["latency_statements_per_job"] > 0
