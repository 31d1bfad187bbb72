"""The benchmark harness runs a scenario and its baseline and reports medians and a ratio."""

from __future__ import annotations

import json

import pytest

from bench import harness
from bench.__main__ import main
from pgmbus.testing.server import TestServer


def test_insert_copy_scenario_reports_ratio(pg_server: TestServer) -> None:
    module = harness.load("insert_copy")
    report = harness.run(module, pg_server.admin_dsn, size=500, rounds=3)
    data = report.as_dict()
    assert data["rounds"] == 3
    assert len(data["candidate_rates"]) == 3 and len(data["baseline_rates"]) == 3
    assert data["ratio"] == round(report.candidate.median / report.baseline.median, 3)
    assert report.candidate.median > 0 and report.baseline.median > 0


def test_cli_prints_table_and_json(
    pg_server: TestServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["insert_copy", "--dsn", pg_server.admin_dsn, "--size", "200", "--rounds", "2"])
    assert code == 0
    out = capsys.readouterr().out
    start = out.index("[\n")
    reports = json.loads(out[start:])
    assert reports[0]["scenario"] == "insert_copy"
    assert "ratio" in out


def test_unknown_scenario_is_named() -> None:
    try:
        harness.load("no_such_scenario")
    except SystemExit as exc:
        assert "no_such_scenario" in str(exc)
        assert "insert_copy" in str(exc)
    else:
        raise AssertionError("expected SystemExit")


def test_stream_cuts_walks_the_whole_transaction_in_cuts(pg_server: TestServer) -> None:
    module = harness.load("stream_cuts")
    report = harness.run(module, pg_server.admin_dsn, size=3_500, rounds=1)
    data = report.as_dict()
    # the scenario itself checks that both walks end at the transaction's end
    assert data["candidate_extra"]["cuts"] == 4 and data["baseline_extra"]["cuts"] == 1
    # the same rows copied out, plus one COPY header and trailer per part and cut
    copied = data["candidate_extra"]["copied_mb"] - data["baseline_extra"]["copied_mb"]
    assert abs(copied * 1e6 - 3 * 2 * 21) < 1
