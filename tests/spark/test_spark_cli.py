"""``pgmbus pipeline ...``: options, durations and a real archive run with progress."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from pgmbus.cli import app
from pgmbus.cli.spark import parse_duration
from pgmbus.errors import ConfigurationError


def test_parse_duration() -> None:
    assert parse_duration("90s") == dt.timedelta(seconds=90)
    assert parse_duration("1.5h") == dt.timedelta(minutes=90)
    assert parse_duration(" 7d ") == dt.timedelta(days=7)
    with pytest.raises(ConfigurationError, match="invalid duration"):
        parse_duration("soon")


def test_pipeline_help_lists_the_jobs() -> None:
    result = CliRunner().invoke(app, ["pipeline", "--help"])
    assert result.exit_code == 0
    assert "archive" in result.output and "stats" in result.output


def test_archive_command_reports_progress(spark: Any, db_dsn: str, tmp_path: Path) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute(
            "INSERT INTO mbus.events (topic, payload, published_at) "
            "SELECT 'old', jsonb_build_object('n', g), now() - interval '2 days' "
            "FROM generate_series(1, 25) AS g"
        )
    result = CliRunner().invoke(
        app,
        [
            "pipeline",
            "archive",
            "--path",
            str(tmp_path / "a"),
            "--older-than",
            "1d",
            "--batch",
            "10",
            "--dsn",
            db_dsn,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "archived 25 events in 3 batch(es)" in result.output
    assert "batch 0: 10 events" in result.output
