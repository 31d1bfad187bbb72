"""The queue workflows section of ``make demo`` (examples/demo_15_workflows.py) runs as shipped."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_workflows_demo_runs_on_a_fresh_database(
    db_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = EXAMPLES / "demo_15_workflows.py"
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.__doc__ and module.__doc__.startswith("Queue workflows:")  # the demo's banner
    module.run(db_dsn)
    out = capsys.readouterr().out
    assert "saga" in out and "original mbus API" in out
    assert "part two" not in out.lower() and "seed" not in out.lower()
