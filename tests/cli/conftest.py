"""Helpers of the command-line tests: run ``pgmbus`` in-process (typer's runner) or as a process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import typer
import typer.testing
from typer.testing import CliRunner, Result

from pgmbus.cli import app
from tests.processes import PROCESS_DEADLINE_S

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
COMMAND = typer.main.get_command(app)  # built once: typer rebuilds the tree on each invoke of app


def run(*args: str, env: Mapping[str, str | None] | None = None) -> Result:
    """Run ``pgmbus ARGS`` in this process; no run may ever print a traceback."""
    with mock.patch.object(typer.testing, "_get_command", lambda _: COMMAND):
        result = runner.invoke(app, list(args), env=dict(env or {}))
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return result


def run_process(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = PROCESS_DEADLINE_S
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pgmbus ARGS`` as a person would (a fresh process; a loaded machine can
    take many seconds to start one, so the deadline only bounds a hung run)."""
    return subprocess.run(
        [sys.executable, "-m", "pgmbus", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=process_env(env),
        cwd=ROOT,
    )


def process_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment with the worktree's sources first, ``PGMBUS_DSN`` unset, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "PGMBUS_DSN"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    env.update(extra or {})
    return env


def error_line(result: Result) -> str:
    """The one line a failed command printed on stderr."""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


@dataclass(frozen=True)
class Command:
    """A leaf command of the ``pgmbus`` tree, with placeholder values for what it requires."""

    path: tuple[str, ...]
    params: Any

    def argv(self, dsn: str) -> list[str]:
        args = list(self.path)
        for p in self.params:
            if p.name == "dsn":
                continue
            if p.param_type_name == "argument" and p.required:
                args.append(_placeholder(p))
            elif p.param_type_name == "option" and p.required:
                args += [p.opts[0], _placeholder(p)]
        return [*args, "--dsn", dsn]


def _placeholder(param: Any) -> str:
    if param.name == "handler":
        return "json:loads"
    if param.name == "target":  # pgmbus worker: the module:bus form
        return "tests.cli.worker_app:app"
    if param.name in ("data", "payload"):
        return "{}"
    annotation = str(getattr(getattr(param, "type_descriptor", None), "annotation", ""))
    return "1" if "int" in annotation or "float" in annotation else "x"


def commands() -> Iterator[Command]:
    """Every leaf command (hidden aliases too) that takes ``--dsn``."""

    def walk(cmd: Any, path: tuple[str, ...]) -> Iterator[Command]:
        subs = getattr(cmd, "commands", None)
        if subs is not None:
            for name, sub in sorted(subs.items()):
                yield from walk(sub, (*path, name))
        elif any(p.name == "dsn" for p in cmd.params):
            yield Command(path, cmd.params)

    yield from walk(COMMAND, ())


@pytest.fixture
def bare_dsn(make_db: Any) -> str:
    """A database without the mbus schema."""
    dsn: str = make_db(installed=False)
    return dsn
