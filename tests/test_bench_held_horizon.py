"""``python -m bench held_horizon``, tiny: half-second windows, the horizon held for three."""

from __future__ import annotations

import json

import pytest

from bench.__main__ import main
from pgmbus.testing.server import TestServer


def test_held_horizon_reports_windows_per_phase(
    pg_server: TestServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["held_horizon", "--dsn", pg_server.admin_dsn, "--sides", "pgmbus,pgmq,raw"]
    argv += ["--minutes", "0.025", "--window", "0.5", "--rates", "200"]
    argv += ["--warm-windows", "1", "--after-windows", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    (report,) = json.loads(out[out.index("[\n") :])
    assert report["scenario"] == "held_horizon"
    assert report["skipped"] == {"pgmq": "needs its install script: --pgmq-sql PATH"}
    sides = {s["side"]: s for s in report["sides"]}
    assert set(sides) == {"pgmbus", "raw"}
    for side in sides.values():
        assert [w["phase"] for w in side["windows"]] == ["warm", "held", "held", "held", "after"]
        assert side["unheld_per_s"] > 0 and side["posted"] > 0
        # every posted message was claimed exactly once, held horizon or not
        assert side["lost"] == 0 and side["duplicates"] == 0
        assert side["held_ratio"] == pytest.approx(side["held_per_s"] / side["unheld_per_s"], 0.01)
        assert side["mb_peak"] >= side["mb_before"] > 0
    assert sides["raw"]["pgmbus_to_side_held"] > 0
