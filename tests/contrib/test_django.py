"""Django on pgmbus: a real project on PostgreSQL, migrate, posts in atomic, the worker command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from pgmbus.queues import Bus
from tests.processes import reap, stop

ROOT = Path(__file__).resolve().parents[2]
PROJECT = Path(__file__).resolve().parent / "django_project"


def manage_env(dsn: str) -> dict[str, str]:
    return {
        **os.environ,
        "PGMBUS_DJANGO_DSN": dsn,
        "DJANGO_SETTINGS_MODULE": "djproject.settings",
        "PYTHONPATH": os.pathsep.join([str(PROJECT), str(ROOT / "src"), str(ROOT)]),
    }


def manage(dsn: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT,
        env=manage_env(dsn),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def orders(dsn: str) -> list[tuple[str, bool]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT item, shipped FROM orders_order ORDER BY id").fetchall()
    return [(str(r[0]), bool(r[1])) for r in rows]


def depth(dsn: str) -> int:
    with Bus(dsn) as bus:
        return sum(s.depth for s in bus.stats("orders"))


@pytest.fixture
def django_dsn(make_db: Callable[..., str]) -> str:
    dsn = make_db(installed=False)
    out = manage(dsn, "migrate", "--no-input")
    assert "Applying pgmbus.0001_install... OK" in out
    return dsn


def test_migrate_installs_the_schema_and_the_command_sees_it_current(django_dsn: str) -> None:
    with psycopg.connect(django_dsn) as conn:
        assert conn.execute("SELECT to_regproc('mbus.post_orders') IS NOT NULL").fetchone() == (
            True,
        )
    assert "schema current on 'default'; migrations applied: none" in manage(
        django_dsn, "pgmbus_install"
    )


def test_post_commits_and_rolls_back_with_the_atomic_block_then_the_worker_handles_it(
    django_dsn: str,
) -> None:
    assert "rolled back: payment declined" in manage(django_dsn, "place_order", "bad", "--fail")
    assert orders(django_dsn) == [] and depth(django_dsn) == 0
    assert "placed" in manage(django_dsn, "place_order", "book")
    assert orders(django_dsn) == [("book", False)] and depth(django_dsn) == 1

    worker = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "pgmbus_worker",
            "orders.handlers:ship",
            "--queue",
            "orders",
            "--poll",
            "0.2",
        ],
        cwd=PROJECT,
        env=manage_env(django_dsn),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while orders(django_dsn) != [("book", True)]:
            assert time.monotonic() < deadline, "the worker did not ship the order"
            time.sleep(0.1)
        done = stop(worker)
    finally:
        reap(worker)
    assert done.returncode == 0, done.stderr
    assert "1 done, 0 retried, 0 dead" in done.stdout
    assert depth(django_dsn) == 0


def test_dsn_comes_from_the_default_or_a_named_alias(django_dsn: str) -> None:
    code = (
        "import json, psycopg; from pgmbus.contrib.django import dsn; "
        "print(json.dumps([psycopg.conninfo.conninfo_to_dict(dsn(a)) for a in (None, 'bus')]))"
    )
    default, named = json.loads(manage(django_dsn, "shell", "-c", code).splitlines()[-1])
    expected = psycopg.conninfo.conninfo_to_dict(django_dsn)
    assert default == expected
    assert named == {**expected, "application_name": "pgmbus-bus"}
