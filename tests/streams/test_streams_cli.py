"""``pgmbus streams ...`` and ``pgmbus maintain`` against a real database."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import psycopg
from typer.testing import CliRunner

from pgmbus.cli import app

runner = CliRunner()


def _ok(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_streams_commands_end_to_end(db_dsn: str) -> None:
    for command in (
        "publish",
        "create-group",
        "read",
        "seek",
        "groups",
        "capture",
        "repair-after-restore",
        "dmq",
    ):
        assert command in _ok("streams", "--help")
    assert "maintain" in _ok("--help")
    _ok("streams", "create-group", "cli", "--start", "beginning", "--dsn", db_dsn)
    eid = int(_ok("streams", "publish", "orders", '{"n": 1}', "--key", "k", "--dsn", db_dsn))
    out = _ok("streams", "read", "cli", "--commit", "--dsn", db_dsn)
    first = json.loads(out.splitlines()[0])
    assert first["id"] == eid and first["payload"] == {"n": 1} and first["key"] == "k"
    assert _ok("streams", "read", "cli", "--dsn", db_dsn).strip().endswith("cursor None")
    groups = json.loads(_ok("streams", "groups", "--json", "--dsn", db_dsn))
    assert groups[0]["group"] == "cli" and groups[0]["pending_events"] == 0
    _ok("streams", "seek", "cli", "beginning", "--dsn", db_dsn)
    again = _ok("streams", "read", "cli", "--dsn", db_dsn)
    assert json.loads(again.splitlines()[0])["id"] == eid
    report = json.loads(_ok("maintain", "--json", "--dsn", db_dsn))
    assert report["dropped"] == [] and "expired_groups" in report
    bad = runner.invoke(app, ["streams", "create-group", "cli", "--dsn", db_dsn])
    assert bad.exit_code == 1 and "already exists" in bad.output


def test_repair_after_restore_command(db_dsn: str) -> None:
    _ok("streams", "create-group", "g", "--start", "beginning", "--dsn", db_dsn)
    _ok("streams", "publish", "t", "{}", "--dsn", db_dsn)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("UPDATE mbus.stream_state SET system_identifier = 1")
    refused = runner.invoke(app, ["streams", "read", "g", "--dsn", db_dsn])
    assert refused.exit_code == 1 and "repair-after-restore" in refused.output
    out = _ok("streams", "repair-after-restore", "--dsn", db_dsn)
    assert "group g: 1 unread event(s) queued" in " ".join(out.split())
    _ok("streams", "read", "g", "--dsn", db_dsn)


def test_metrics_command_exposes_counters_and_group_gauges(db_dsn: str) -> None:
    _ok("streams", "create-group", "m", "--start", "beginning", "--dsn", db_dsn)
    _ok("streams", "publish", "t", "{}", "--dsn", db_dsn)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus._count('groups_expired')")
    text = _ok("streams", "metrics", "--dsn", db_dsn)
    assert 'pgmbus_streams_events_total{kind="groups_expired"} 1' in text
    assert 'pgmbus_streams_group_pending_events{group="m",slot="0"} 1' in text
    assert 'pgmbus_streams_group_expired{group="m",slot="0"} 0' in text


def test_publish_to_one_subscription_and_for_later(db_dsn: str) -> None:
    """Issue 17 (PGMB seed rows) on the command line: ``--subscription-id``, ``--delayed-until``."""
    _ok("streams", "create-group", "cli", "--dsn", db_dsn)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        row = conn.execute("SELECT mbus.subscribe('cli', 'false')").fetchone()
    assert row is not None
    sid = row[0]
    direct = int(
        _ok("streams", "publish", "dm", "{}", "--subscription-id", str(sid), "--dsn", db_dsn)
    )
    later = int(
        _ok(
            "streams",
            "publish",
            "t",
            "{}",
            "--delayed-until",
            (datetime.now(UTC) + timedelta(days=1)).isoformat(),
            "--dsn",
            db_dsn,
        )
    )
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        got = conn.execute("SELECT subscription_id FROM mbus.events WHERE id = %s", (direct,))
        assert got.fetchone() == (sid,)
        waiting = conn.execute("SELECT id FROM mbus.stream_scheduled").fetchall()
        assert waiting == [(later,)]
    naive = runner.invoke(
        app,
        ["streams", "publish", "t", "{}", "--delayed-until", "2999-01-01T00:00", "--dsn", db_dsn],
    )
    assert naive.exit_code == 2 and "time zone" in naive.output
    unknown = runner.invoke(
        app, ["streams", "publish", "t", "{}", "--subscription-id", "999999", "--dsn", db_dsn]
    )
    assert unknown.exit_code == 1 and "does not exist" in unknown.output
