"""Output for pipes and for terminals: piped tables are plain, one line a row, whatever
``$COLUMNS`` says; ``top`` keeps every table in view and says what it left out."""

from __future__ import annotations

import io
import subprocess
import sys

import psycopg
import pytest
from rich.console import Console
from rich.live import Live

from pgmbus.cli import common, top
from pgmbus.queues import Bus
from tests.cli.conftest import ROOT, process_env

QUEUE = "orders_europe_west_1234"  # 23 bytes: names go up to 24
CONSUMER = "billing_and_invoicing_77"


def test_piped_tables_are_plain_one_line_per_row(db_dsn: str) -> None:
    with Bus(db_dsn) as bus:
        bus.create_queue(QUEUE)
        bus.create_consumer(QUEUE, CONSUMER)
    for command in (("queue", "stats"), ("queue", "list")):
        done = subprocess.run(
            [sys.executable, "-m", "pgmbus", *command, "--dsn", db_dsn],
            capture_output=True,
            text=True,
            timeout=60,
            env=process_env({"COLUMNS": "80"}),
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert not any(c in done.stdout for c in "│┃━─┏└"), done.stdout
        assert "\x1b[" not in done.stdout  # no colour codes either
        rows = [line for line in lines if line.startswith(QUEUE)]
        assert rows and all(CONSUMER in line or "default" in line for line in rows), lines
        if command == ("queue", "stats"):
            assert len(rows) == 2 and sum(CONSUMER in line for line in rows) == 1


def test_top_in_a_short_terminal_keeps_the_timers_and_says_what_it_left_out(
    db_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(common.console, "_force_terminal", True)  # tables with their boxes
    monkeypatch.setattr(common.console, "_color_system", None)
    with Bus(db_dsn) as bus:
        for n in range(40):
            bus.create_queue(f"q{n:02}")
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        snapshot = top.fetch(conn, 5.0)
    assert len(snapshot["queues"]) == 40
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=120, height=30, color_system=None)
    with Live(console=terminal, auto_refresh=False, screen=False) as live:
        live.update(top.render(snapshot, "FRAME", terminal.height), refresh=True)
    text = screen.getvalue()
    last_frame = text.split("FRAME")[-1]
    assert "timers" in last_frame and "dispatchers" in last_frame, text
    assert "┏" in last_frame
    shown = sum(f"q{n:02}" in last_frame for n in range(40))
    assert 0 < shown < 40, text
    assert f"… {40 - shown} more queue rows not shown" in last_frame
    assert len(last_frame.splitlines()) <= 30


def test_top_once_shows_every_row(db_dsn: str) -> None:
    with Bus(db_dsn) as bus:
        for n in range(40):
            bus.create_queue(f"q{n:02}")
    done = subprocess.run(
        [sys.executable, "-m", "pgmbus", "top", "--once", "--dsn", db_dsn],
        capture_output=True,
        text=True,
        timeout=60,
        env=process_env(),
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert all(f"q{n:02}" in done.stdout for n in range(40))
    assert "not shown" not in done.stdout and "timers" in done.stdout
