"""Celery's results on the broker's database (``result_backend = "pgmbus://..."``) with a
real worker: results, a chord, a get() woken by the result's NOTIFY, expiry."""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Iterator
from types import ModuleType

import psycopg
import pytest
from celery import chord

from pgmbus.contrib.celery_results import PgmbusBackend
from tests.contrib.celery_helpers import Start


@pytest.fixture(scope="module")
def rtasks(celery_env: dict[str, str]) -> Iterator[ModuleType]:
    """The test app with ``result_backend`` on pgmbus:// (workers started inherit it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PGMBUS_CELERY_BACKEND", "pgmbus")
        sys.modules.pop("tests.contrib.celery_app", None)
        yield importlib.import_module("tests.contrib.celery_app")
    sys.modules.pop("tests.contrib.celery_app", None)


@pytest.fixture(scope="module")
def results_worker(rtasks: ModuleType, start_worker: Start) -> None:
    start_worker("results", "celery", concurrency=4)


def test_the_backend_is_the_database(rtasks: ModuleType) -> None:
    assert isinstance(rtasks.app.backend, PgmbusBackend)


def test_a_result_is_stored_with_its_expiry(
    rtasks: ModuleType, results_worker: None, celery_env: dict[str, str]
) -> None:
    result = rtasks.add.delay(2, 3)
    assert result.get(timeout=60) == 5
    with psycopg.connect(celery_env["PGMBUS_CELERY_DSN"]) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM expires_at - stored_at) FROM mbus.celery_results"
            " WHERE key = %s",
            (f"celery-task-meta-{result.id}",),
        ).fetchone()
    assert row is not None
    assert abs(float(row[0]) - rtasks.app.conf.result_expires.total_seconds()) < 5


def test_a_chord_runs_its_body_on_its_header_results(
    rtasks: ModuleType, results_worker: None
) -> None:
    result = chord(rtasks.add.s(i, i) for i in range(10))(rtasks.total.s())
    assert result.get(timeout=90) == 90


def test_get_is_woken_by_the_notify_of_its_result(
    rtasks: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No poll could explain the wake-up: the longest wait between looks is 60 s."""
    backend = rtasks.app.backend
    monkeypatch.setattr(backend, "longest_wait", 60.0)
    task_id = "woken-by-notify"

    def store_later() -> None:
        time.sleep(0.5)
        other = PgmbusBackend(app=rtasks.app, url=backend.url)
        other.store_result(task_id, 42, "SUCCESS")
        other.close()

    threading.Thread(target=store_later, daemon=True).start()
    started = time.monotonic()
    meta = backend.wait_for(task_id, timeout=120)
    assert meta["result"] == 42
    assert time.monotonic() - started < 30


def test_an_expired_result_is_not_read_and_cleanup_deletes_it(
    rtasks: ModuleType, celery_env: dict[str, str]
) -> None:
    backend = rtasks.app.backend
    backend.store_result("expiring", 7, "SUCCESS")
    assert rtasks.app.AsyncResult("expiring").get(timeout=10) == 7
    with psycopg.connect(celery_env["PGMBUS_CELERY_DSN"], autocommit=True) as conn:
        conn.execute(
            "UPDATE mbus.celery_results SET expires_at = now() - interval '1 second'"
            " WHERE key = 'celery-task-meta-expiring'"
        )
        assert rtasks.app.AsyncResult("expiring").state == "PENDING"
        backend.cleanup()
        row = conn.execute(
            "SELECT count(*) FROM mbus.celery_results WHERE key = 'celery-task-meta-expiring'"
        ).fetchone()
    assert row == (0,)
