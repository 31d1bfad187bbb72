"""Celery tasks sent in the application's transaction commit with it (real workers, real
Django, SQLAlchemy and psycopg transactions on the broker's database)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from types import ModuleType
from typing import Any

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from pgmbus.contrib.celery import bind_session, transaction
from pgmbus.errors import InvalidArgument
from pgmbus.queues import Bus
from pgmbus.testing.server import TestServer
from tests.contrib.celery_helpers import ROOT, Start, effects, wait_for


@pytest.fixture(scope="module")
def worker(start_worker: Start, tasks: ModuleType) -> subprocess.Popen[bytes]:
    return start_worker("tx", "celery")


@pytest.fixture(scope="module")
def dsn(celery_env: dict[str, str]) -> str:
    return celery_env["PGMBUS_CELERY_DSN"]


def ran(dsn: str, key: str) -> list[str]:
    return [worker for worker, _info, _at in effects(dsn, key)]


def marker_ran(tasks: ModuleType, dsn: str, key: str) -> None:
    """Send a committed task after the one under test and wait for it: by then a task that
    had been posted would have run too."""
    tasks.stamp.delay(key + ":marker")
    wait_for(lambda: bool(effects(dsn, key + ":marker")), timeout=30)
    with Bus(dsn) as bus:
        wait_for(lambda: bus.stats("celery")[0].depth == 0, timeout=30)


def django_send(dsn: str, mode: str, key: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tests.contrib.celery_django_send", mode, key],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# --- Django ---------------------------------------------------------------------------------


def test_django_committed_atomic_runs_the_task_once_after_the_commit(
    tasks: ModuleType, worker: Any, dsn: str
) -> None:
    before_commit = datetime.fromisoformat(django_send(dsn, "commit", "dj-commit"))
    wait_for(lambda: bool(effects(dsn, "dj-commit")), timeout=30)
    marker_ran(tasks, dsn, "dj-commit")
    [(_w, _info, at)] = effects(dsn, "dj-commit")
    assert at > before_commit  # sent 1 s before the commit, it ran only after it
    assert ran(dsn, "dj-commit:app") == ["app"]


def test_django_rolled_back_atomic_never_runs_the_task(
    tasks: ModuleType, worker: Any, dsn: str
) -> None:
    django_send(dsn, "rollback", "dj-rollback")
    marker_ran(tasks, dsn, "dj-rollback")
    assert ran(dsn, "dj-rollback") == []
    assert ran(dsn, "dj-rollback:app") == []


def test_django_rolled_back_savepoint_drops_only_its_task(
    tasks: ModuleType, worker: Any, dsn: str
) -> None:
    django_send(dsn, "savepoint", "dj-sp")
    marker_ran(tasks, dsn, "dj-sp")
    assert ran(dsn, "dj-sp:outer") == ["tx"]
    assert ran(dsn, "dj-sp:inner") == []


def test_django_opt_out_posts_at_once_despite_the_rollback(
    tasks: ModuleType, worker: Any, dsn: str
) -> None:
    django_send(dsn, "opt-out", "dj-optout")
    wait_for(lambda: bool(effects(dsn, "dj-optout")), timeout=30)
    assert ran(dsn, "dj-optout") == ["tx"]
    assert ran(dsn, "dj-optout:app") == []  # the app's row did roll back


def test_django_outside_atomic_posts_at_once(tasks: ModuleType, worker: Any, dsn: str) -> None:
    django_send(dsn, "autocommit", "dj-auto")
    wait_for(lambda: bool(effects(dsn, "dj-auto")), timeout=30)
    assert ran(dsn, "dj-auto") == ["tx"]


# --- SQLAlchemy -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine(dsn: str) -> Iterator[Any]:
    made = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn))
    yield made
    made.dispose()


def app_row(session: Session, key: str) -> None:
    session.execute(
        text("INSERT INTO celery_effects (key, worker) VALUES (:key, 'app')"),
        {"key": key + ":app"},
    )


def test_sqlalchemy_session_commit_runs_the_task_once(
    tasks: ModuleType, worker: Any, dsn: str, engine: Any
) -> None:
    with Session(engine) as session, bind_session(session):
        app_row(session, "sa-commit")
        tasks.stamp.delay("sa-commit")
        with Bus(dsn) as bus:
            assert bus.stats("celery")[0].depth == 0  # not there before the commit
        session.commit()
    wait_for(lambda: bool(effects(dsn, "sa-commit")), timeout=30)
    marker_ran(tasks, dsn, "sa-commit")
    assert ran(dsn, "sa-commit") == ["tx"]
    assert ran(dsn, "sa-commit:app") == ["app"]


def test_sqlalchemy_session_rollback_never_runs_the_task(
    tasks: ModuleType, worker: Any, dsn: str, engine: Any
) -> None:
    with Session(engine) as session, bind_session(session):
        app_row(session, "sa-rollback")
        tasks.stamp.delay("sa-rollback")
        session.rollback()
    marker_ran(tasks, dsn, "sa-rollback")
    assert ran(dsn, "sa-rollback") == []
    assert ran(dsn, "sa-rollback:app") == []


# --- an explicit psycopg connection ---------------------------------------------------------


def test_explicit_connection_rollback_never_runs_and_commit_runs_once(
    tasks: ModuleType, worker: Any, dsn: str
) -> None:
    with psycopg.connect(dsn) as conn, transaction(conn):
        tasks.stamp.delay("pg-rollback")
        conn.rollback()
        tasks.stamp.delay("pg-commit")
        conn.commit()
    wait_for(lambda: bool(effects(dsn, "pg-commit")), timeout=30)
    marker_ran(tasks, dsn, "pg")
    assert ran(dsn, "pg-commit") == ["tx"]
    assert ran(dsn, "pg-rollback") == []


def test_a_task_routed_with_the_opt_out_is_posted_at_once(
    tasks: ModuleType, worker: Any, dsn: str
) -> None:
    with psycopg.connect(dsn) as conn, transaction(conn):
        tasks.alert.delay("pg-alert")
        tasks.stamp.delay("pg-alert-stamp")
        conn.rollback()
    wait_for(lambda: bool(effects(dsn, "pg-alert")), timeout=30)
    marker_ran(tasks, dsn, "pg-alert")
    assert ran(dsn, "pg-alert") == ["tx"]
    assert ran(dsn, "pg-alert-stamp") == []


def test_a_connection_to_another_database_is_not_joined(
    tasks: ModuleType, worker: Any, dsn: str, pg_server: TestServer
) -> None:
    """The task cannot commit with another database: it is posted at once, as without one."""
    other = pg_server.create_database()
    try:
        with psycopg.connect(pg_server.dsn(other)) as conn, transaction(conn):
            conn.execute("SELECT 1")
            tasks.stamp.delay("pg-other")
            conn.rollback()
        wait_for(lambda: bool(effects(dsn, "pg-other")), timeout=30)
    finally:
        pg_server.drop_database(other)


def test_a_bad_opt_out_value_is_refused_and_posts_nothing(
    tasks: ModuleType, worker: Any, dsn: str
) -> None:
    with psycopg.connect(dsn) as conn, transaction(conn):
        with pytest.raises(InvalidArgument, match="pgmbus_transactional"):
            tasks.stamp.apply_async(("pg-bad",), pgmbus_transactional="no")
        conn.commit()
    marker_ran(tasks, dsn, "pg-bad")
    assert ran(dsn, "pg-bad") == []


def test_transaction_takes_only_a_psycopg_connection() -> None:
    with pytest.raises(InvalidArgument, match="psycopg 3 Connection"), transaction(object()):  # type: ignore[arg-type]
        pass
    with pytest.raises(InvalidArgument, match="SQLAlchemy Session"), bind_session(object()):
        pass


def test_a_retry_asked_in_a_rolled_back_transaction_still_runs(
    tasks: ModuleType, worker: Any, dsn: str
) -> None:
    """Celery's retry is sent again by the task itself: the rollback its exception causes
    must not take the retry with it (the original is acked as retried)."""
    assert tasks.retry_in_transaction.delay("retry-tx").get(timeout=30) == "retried"
    assert ran(dsn, "retry-tx") == ["tx", "tx"]
    assert ran(dsn, "retry-tx:rolled-back") == []
