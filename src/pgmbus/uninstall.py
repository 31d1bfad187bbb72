"""Remove pgmbus from a database: the ``mbus`` schema, the roles it made, the pg_cron job.

``DROP SCHEMA mbus CASCADE`` alone leaves the per-queue roles behind (roles belong to the
cluster, not to a database) and the upkeep job in pg_cron's database. ``uninstall`` drops the
schema and those roles in one transaction, then the pg_cron job, and returns what it removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg

from pgmbus import schedule
from pgmbus.data.install import UNINSTALL
from pgmbus.errors import ConfigurationError, SchemaNotInstalledError
from pgmbus.schema import INSTALL_LOCK_KEY


@dataclass(frozen=True)
class Removed:
    """What an uninstall removed."""

    database: str
    dependents: list[tuple[str, str]] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    cron_job: bool = False


def uninstall(conn: psycopg.Connection[Any], dsn: str, *, confirm: str) -> Removed:
    """Drop the schema and the roles made for this database, then its pg_cron upkeep job.

    ``confirm`` must be the name of the connection's database (a guard against the wrong DSN);
    otherwise ``ConfigurationError`` and nothing changes. ``SchemaNotInstalledError`` when the
    database has no mbus schema.
    """
    q = UNINSTALL
    database = conn.info.dbname
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise ConfigurationError("uninstall needs a connection that is not inside a transaction")
    row = conn.execute(q["schema_exists"]).fetchone()
    if not row or not row[0]:
        raise SchemaNotInstalledError(
            f"database {database!r} has no mbus schema: nothing to uninstall (to make one, "
            "run `pgmbus install`)"
        )
    if confirm != database:
        raise ConfigurationError(
            f"--confirm {confirm!r} does not name the database of the DSN ({database!r}); "
            "nothing was removed"
        )
    was_autocommit = conn.autocommit
    conn.autocommit = True
    try:
        with conn.transaction():
            conn.execute(q["lock"], {"key": INSTALL_LOCK_KEY})
            row = conn.execute(q["schema_exists"]).fetchone()
            if not row or not row[0]:
                raise SchemaNotInstalledError(
                    f"database {database!r} has no mbus schema: nothing to uninstall"
                )
            dependents = [(str(k), str(n)) for k, n in conn.execute(q["dependents"]).fetchall()]
            roles = [str(r[0]) for r in conn.execute(q["roles"]).fetchall()]
            conn.execute(q["drop_schema"])
            for role in roles:
                for statement in conn.execute(q["drop_role"], {"role": role}).fetchone() or ():
                    conn.execute(str(statement).encode())  # built in SQL by format('%I')
    finally:
        conn.autocommit = was_autocommit
    return Removed(database, dependents, roles, _unschedule(dsn))


def _unschedule(dsn: str) -> bool:
    """Remove the pg_cron upkeep job; False when there is none or the server has no pg_cron."""
    try:
        return schedule.unschedule_upkeep(dsn)
    except ConfigurationError:
        return False  # pg_cron is not there: no job can be
