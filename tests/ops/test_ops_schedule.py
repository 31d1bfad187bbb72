"""`pgmbus install --schedule`: the storage upkeep as a pg_cron job, so SQL-only consumers need
no client to rotate, truncate and maintain (the test server preloads pg_cron when Debian's
postgresql-<n>-cron is installed, as scripts/bootstrap.sh does)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from pgmbus import schedule
from pgmbus.errors import ConfigurationError
from tests.cli.conftest import error_line, run


@pytest.fixture
def cron_db(db_dsn: str) -> Iterator[str]:
    """A database whose upkeep job is removed afterwards (pg_cron's jobs outlive databases)."""
    with psycopg.connect(db_dsn) as conn:
        row = conn.execute("SHOW shared_preload_libraries").fetchone()
    if os.environ.get("PGMBUS_TEST_DSN") and (row is None or "pg_cron" not in str(row[0])):
        pytest.skip("the session server is external (PGMBUS_TEST_DSN) and has no pg_cron")
    if row is None or "pg_cron" not in str(row[0]):
        pytest.fail("the test server does not preload pg_cron (scripts/bootstrap.sh installs it)")
    yield db_dsn
    schedule.unschedule_upkeep(db_dsn)


def _jobs(dsn: str) -> list[tuple[str, str, str]]:
    with psycopg.connect(make_conninfo(dsn, dbname="postgres")) as conn:
        rows = conn.execute(
            "SELECT jobname, schedule, database FROM cron.job WHERE jobname LIKE 'pgmbus-upkeep:%'"
        ).fetchall()
    return [(str(a), str(b), str(c)) for a, b, c in rows]


def test_install_schedule_keeps_one_job_per_database_and_unschedules(cron_db: str) -> None:
    database = psycopg.conninfo.conninfo_to_dict(cron_db)["dbname"]
    name = f"pgmbus-upkeep:{database}"
    first = run("install", "--schedule", "--dsn", cron_db)
    assert first.exit_code == 0, first.output
    assert f"'{name}'" in first.output
    again = run("install", "--schedule", "--every", "*/5 * * * *", "--dsn", cron_db)
    assert again.exit_code == 0, again.output
    mine = [j for j in _jobs(cron_db) if j[0] == name]
    assert mine == [(name, "*/5 * * * *", database)]  # replaced, not added
    job = schedule.upkeep_job(cron_db)
    assert job is not None and job.command == schedule.COMMAND and job.active
    bad = run("install", "--schedule", "--every", "every tuesday", "--dsn", cron_db)
    assert bad.exit_code == 1 and "invalid schedule" in error_line(bad)
    assert [j for j in _jobs(cron_db) if j[0] == name] == mine  # unchanged
    both = run("install", "--schedule", "--unschedule", "--dsn", cron_db)
    assert both.exit_code == 2
    gone = run("install", "--unschedule", "--dsn", cron_db)
    assert gone.exit_code == 0 and "removed" in gone.output
    assert schedule.upkeep_job(cron_db) is None
    assert "no pg_cron upkeep job" in run("install", "--unschedule", "--dsn", cron_db).output


def test_a_server_without_pg_cron_gets_a_message_saying_what_to_do() -> None:
    with pytest.raises(ConfigurationError, match="apt install postgresql-<version>-cron"):
        schedule.check_cron(available=False, preloaded=False)
    with pytest.raises(ConfigurationError, match="shared_preload_libraries = 'pg_cron'"):
        schedule.check_cron(available=True, preloaded=False)
    schedule.check_cron(available=True, preloaded=True)


@pytest.mark.chaos  # waits for pg_cron's next minute: `make chaos`
def test_the_job_truncates_drained_segments_with_no_client_calling_upkeep(cron_db: str) -> None:
    with psycopg.connect(cron_db, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue('soak', 1)")
        # tiny segments, and the claims' own upkeep off: only the job can rotate
        conn.execute(
            "UPDATE mbus.queue_segment SET rotate_bytes = 16384, upkeep_every = NULL "
            "WHERE qname = 'soak'"
        )
        for _ in range(3):  # SQL-only producers and consumers
            conn.execute(
                "SELECT mbus.post_soak(jsonb_build_object('pad', repeat('x', 300))) "
                "FROM generate_series(1, 300)"
            )
            conn.execute("SELECT count(*) FROM mbus.consumen('soak', 'default', 300)")
        schedule.schedule_upkeep(cron_db, "* * * * *")
        deadline = time.monotonic() + 150
        while True:
            row = conn.execute(
                "SELECT rotations, truncations FROM mbus.queue_segment WHERE qname = 'soak'"
            ).fetchone()
            assert row is not None
            if row[0] >= 1 and row[1] >= 1:
                break
            assert time.monotonic() < deadline, f"no rotation by the job: {row}"
            time.sleep(2)
            if row[0] >= 1:  # drained after the rotation: the next run truncates
                conn.execute("SELECT count(*) FROM mbus.consumen('soak', 'default', 1000)")
