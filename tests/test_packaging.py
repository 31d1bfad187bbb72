"""Packaging: pinned constraints match the ranges, and the base install runs the CLI alone."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
EXTRA_ONLY = [
    "fastapi",
    "uvicorn",
    "httpx",
    "croniter",
    "uvloop",
    "pyspark",
    "pyarrow",
    "pandas",
    "celery",
    "kombu",
    "django",
    "adbc_driver_postgresql",
    "standardwebhooks",
]

BLOCKED_CLI = """
import importlib.abc, sys
BLOCK = set(sys.argv[1].split(","))
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCK:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
from typer.testing import CliRunner
from pgmbus.cli import app
runner = CliRunner()
for args in (["--help"], ["queue", "--help"], ["timers", "--help"], ["streams", "--help"],
             ["pipeline", "--help"], ["worker", "--help"]):
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (args, result.output, result.exception)
result = runner.invoke(app, ["dispatcher", "--dsn", "host=/nonexistent"])
assert result.exit_code == 1 and "pgmbus[server]" in result.output, result.output
print("cli ok")
"""


def pins() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    pairs = [line.split("==") for line in lines if line and not line.startswith("#")]
    return {canonicalize_name(name): version for name, version in pairs}


def test_constraints_pin_every_requirement_inside_its_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra]
    pinned = pins()
    for req in reqs:
        name = canonicalize_name(req.name)
        if name == "pgmbus":
            continue
        assert not any(s.operator == "==" for s in req.specifier), f"{req}: a range, not a pin"
        assert name in pinned, f"{req.name} missing from constraints.txt"
        assert req.specifier.contains(pinned[name], prereleases=True), (req, pinned[name])


def test_constraints_min_pins_each_range_at_its_lower_bound() -> None:
    """constraints-min.txt (for `make test-min`) is every requirement's oldest allowed version."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra]
    lines = (ROOT / "constraints-min.txt").read_text().splitlines()
    pinned = dict(line.split("==") for line in lines if line and not line.startswith("#"))
    wanted = {}
    for req in reqs:
        if canonicalize_name(req.name) == "pgmbus":
            continue
        [low] = [s.version for s in req.specifier if s.operator == ">="]
        wanted[canonicalize_name(req.name)] = low
    assert {canonicalize_name(k): v for k, v in pinned.items()} == wanted


def test_constraints_are_the_closure_installed_here() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/update_constraints.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def test_the_cli_runs_without_the_extras() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED_CLI, ",".join(EXTRA_ONLY)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "cli ok" in done.stdout


# The built wheel in a fresh venv, base install and each extra: tests/wheel (the wheel tier).
