"""The pgmbus command: help lists every command; schema commands against a real database."""

from __future__ import annotations

import json
from collections.abc import Callable

from typer.testing import CliRunner

from pgmbus.cli import app

runner = CliRunner()


def test_help_lists_every_command_with_one_line() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("dev", "install", "upgrade", "status"):
        assert command in result.output
    dev = runner.invoke(app, ["dev", "--help"])
    for command in ("start", "stop", "status", "dsn", "psql", "destroy"):
        assert command in dev.output


def test_install_status_and_noop(make_db: Callable[..., str]) -> None:
    dsn = make_db(installed=False)
    before = runner.invoke(app, ["status", "--dsn", dsn, "--json"])
    assert before.exit_code == 1, before.output  # a script's check fails: nothing installed
    assert json.loads(before.output)["installed"] is False

    first = runner.invoke(app, ["install", "--dsn", dsn])
    assert first.exit_code == 0, first.output
    assert "applied 0001_base" in first.output

    again = runner.invoke(app, ["install", "--dsn", dsn])
    assert again.exit_code == 0
    assert "nothing to do" in again.output

    after = json.loads(runner.invoke(app, ["status", "--dsn", dsn, "--json"]).output)
    assert after["installed"] is True
    assert after["schema_version"] == after["latest"]
    assert after["pending"] == []


def test_upgrade_on_empty_database_is_a_clear_error(make_db: Callable[..., str]) -> None:
    dsn = make_db(installed=False)
    result = runner.invoke(app, ["upgrade", "--dsn", dsn])
    assert result.exit_code == 1
    assert "no mbus schema" in result.output


def test_bad_dsn_is_reported_not_raised() -> None:
    result = runner.invoke(app, ["status", "--dsn", "host=127.0.0.1 port=1 connect_timeout=2"])
    assert result.exit_code == 1
    assert "error:" in result.output


def test_status_without_the_schema_exits_non_zero_and_says_to_install(
    make_db: Callable[..., str],
) -> None:
    dsn = make_db(installed=False)
    result = runner.invoke(app, ["status", "--dsn", dsn])
    assert result.exit_code == 1, result.output
    assert "not installed" in result.output and "pgmbus install" in result.output
    assert runner.invoke(app, ["install", "--dsn", dsn]).exit_code == 0
    done = runner.invoke(app, ["status", "--dsn", dsn])
    assert done.exit_code == 0, done.output
    assert "pgmbus 0.2.0" in done.output and "up to date" in done.output
