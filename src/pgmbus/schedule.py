"""Storage upkeep without a client: a pg_cron job running pgmbus's upkeep in a database.

Queues rotate and truncate their segments from their own claims, but a claim sent with
parameters may not truncate (the lock would last into the caller's transaction), and streams
need ``mbus.maintain`` for partitions and retention. A pg_cron job (Debian's
``postgresql-<n>-cron``, preloaded by the server) runs ``CALL mbus.upkeep_run(50)`` every
minute: for 50 seconds it rotates every queue about once a second, each call committed on its
own (a drained segment still locked by consumers is closed by one call and truncated by a later
one; one call a minute never truncates under load), then ``mbus.maintain()``. The job is named
``pgmbus-upkeep:<database>`` and lives in pg_cron's database (``cron.database_name``); scheduling
again replaces it, so there is never more than one per database.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg.conninfo import make_conninfo

from pgmbus.data.install import SCHEDULE as _Q
from pgmbus.errors import ConfigurationError, translating

COMMAND = "CALL mbus.upkeep_run(50)"
DEFAULT_EVERY = "* * * * *"


@dataclass(frozen=True)
class UpkeepJob:
    """The pg_cron job of a database: its id, schedule, command, database and state."""

    jobid: int
    schedule: str
    command: str
    database: str
    active: bool


def job_name(database: str) -> str:
    """The pg_cron job name of a database's upkeep."""
    return f"pgmbus-upkeep:{database}"


def _cron_database(dsn: str) -> tuple[str, str]:
    """The target database's name and pg_cron's database; ``ConfigurationError`` (saying what
    to do) when the server does not run pg_cron."""
    with translating(), psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(_Q["cron_setup"]).fetchone()
    database, preloaded, cron_db, available = row if row else ("", False, "", False)
    check_cron(available=bool(available), preloaded=bool(preloaded))
    return str(database), str(cron_db)


def check_cron(*, available: bool, preloaded: bool) -> None:
    """Raise ``ConfigurationError`` saying what to do when the server cannot run pg_cron jobs."""
    if not available:
        raise ConfigurationError(
            "pg_cron is not installed on this server: install it (Debian: apt install "
            "postgresql-<version>-cron), add shared_preload_libraries = 'pg_cron' to "
            "postgresql.conf and restart; nothing was scheduled"
        )
    if not preloaded:
        raise ConfigurationError(
            "pg_cron is installed but not loaded by this server: add shared_preload_libraries "
            "= 'pg_cron' (and cron.database_name) to postgresql.conf and restart; nothing was "
            "scheduled"
        )


def schedule_upkeep(dsn: str, every: str = DEFAULT_EVERY) -> UpkeepJob:
    """Schedule (or re-schedule) the upkeep of the database of ``dsn``; returns the job.

    ``every`` is a pg_cron schedule: a cron expression (``* * * * *``: each minute), or with
    pg_cron 1.5 and later ``'<n> seconds'``. Creates the pg_cron extension in its database when
    missing (which needs a superuser). Raises ``ConfigurationError`` when pg_cron is not
    available or not loaded, and ``InvalidArgument`` for a schedule pg_cron refuses; nothing
    changes then.
    """
    database, cron_db = _cron_database(dsn)
    with translating(), psycopg.connect(make_conninfo(dsn, dbname=cron_db)) as conn:
        conn.execute(_Q["cron_extension"])
        conn.execute(
            _Q["cron_schedule"],
            {"job": job_name(database), "every": every, "command": COMMAND, "database": database},
        )
        row = conn.execute(_Q["cron_job"], {"job": job_name(database)}).fetchone()
        conn.commit()
    return _job(row)


def unschedule_upkeep(dsn: str) -> bool:
    """Remove the upkeep job of the database of ``dsn``; False when there was none."""
    database, cron_db = _cron_database(dsn)
    with translating(), psycopg.connect(make_conninfo(dsn, dbname=cron_db)) as conn:
        if conn.execute(_Q["cron_installed"]).fetchone() is None:
            return False
        rows = conn.execute(_Q["cron_unschedule"], {"job": job_name(database)}).fetchall()
        conn.commit()
    return bool(rows)


def upkeep_job(dsn: str) -> UpkeepJob | None:
    """The upkeep job of the database of ``dsn``, or None."""
    database, cron_db = _cron_database(dsn)
    with translating(), psycopg.connect(make_conninfo(dsn, dbname=cron_db)) as conn:
        if conn.execute(_Q["cron_installed"]).fetchone() is None:
            return None
        row = conn.execute(_Q["cron_job"], {"job": job_name(database)}).fetchone()
    return None if row is None else _job(row)


def _job(row: tuple[object, ...] | None) -> UpkeepJob:
    if row is None:
        raise ConfigurationError("pg_cron did not keep the job it was given")
    jobid, schedule, command, database, active = row
    return UpkeepJob(int(str(jobid)), str(schedule), str(command), str(database), bool(active))
