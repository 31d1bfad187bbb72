"""``python -m bench held_horizon`` and its ``--backlogs`` mode, tiny (half-second windows)."""

from __future__ import annotations

import json

import pytest

from bench.__main__ import main
from pgmbus.testing.server import TestServer


def test_held_horizon_reports_windows_per_phase(
    pg_server: TestServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["held_horizon", "--dsn", pg_server.admin_dsn, "--sides", "pgmbus,pgmq,stream"]
    argv += ["--minutes", "0.025", "--window", "0.5", "--rates", "200"]
    argv += ["--warm-windows", "1", "--after-windows", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    (report,) = json.loads(out[out.index("[\n") :])
    assert report["scenario"] == "held_horizon"
    assert report["skipped"] == {"pgmq": "needs its install script: --pgmq-sql PATH"}
    sides = {s["side"]: s for s in report["sides"]}
    assert set(sides) == {"pgmbus", "stream"}
    for side in sides.values():
        assert [w["phase"] for w in side["windows"]] == ["warm", "held", "held", "held", "after"]
        assert side["unheld_per_s"] > 0 and side["posted"] > 0
        # every posted message was claimed exactly once, held horizon or not
        assert side["lost"] == 0 and side["duplicates"] == 0
        assert side["held_ratio"] == pytest.approx(side["held_per_s"] / side["unheld_per_s"], 0.01)
        assert side["mb_peak"] >= side["mb_before"] > 0
    assert sides["stream"]["pgmbus_to_side_held"] > 0


def test_claim_backlog_times_claims_per_backlog_size(
    pg_server: TestServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["held_horizon", "--dsn", pg_server.admin_dsn, "--backlogs", "3000,0", "--claims", "50"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    (report,) = json.loads(out[out.index("[\n") :])
    assert report["scenario"] == "claim_backlog" and report["claims"] == 50
    levels = report["levels"]
    assert [x["backlog"] for x in levels] == [0, 3000]
    assert levels[0]["ratio_to_first"] == 1.0
    assert levels[1]["ratio_to_first"] == pytest.approx(
        levels[1]["claim_ms_mean"] / levels[0]["claim_ms_mean"], 0.01
    )
    assert levels[1]["mb"] > levels[0]["mb"] and all(x["claim_ms_p99"] > 0 for x in levels)
