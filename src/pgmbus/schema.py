"""Install, upgrade and check the ``mbus`` schema from the numbered migrations in the package.

Each migration ``sql/migrations/NNNN_name.sql`` is applied in its own transaction and recorded in
``mbus.schema_migrations`` with the sha256 of its text. Installers are serialized by a session
advisory lock, so two of them at once apply every migration exactly once. A database that has
migrations this package does not know, or whose applied migration text was edited afterwards, is
refused with a clear error.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any, LiteralString

import psycopg

from pgmbus import __version__
from pgmbus.errors import (
    MigrationChecksumError,
    SchemaError,
    SchemaNotInstalledError,
    SchemaTooNewError,
)
from pgmbus.sqlfiles import load_queries, read_sql

# pg_advisory_lock key of the installer: the bytes of 'mbus' read as an integer.
INSTALL_LOCK_KEY = 0x6D627573
_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    """One numbered migration file shipped in the package."""

    version: int
    name: str
    sql: LiteralString

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class AppliedMigration:
    """A row of ``mbus.schema_migrations``."""

    version: int
    name: str
    checksum: str
    package_version: str
    applied_at: datetime


@dataclass(frozen=True)
class SchemaStatus:
    """Where a database stands against this package's migrations."""

    installed: bool
    applied: list[AppliedMigration]
    pending: list[Migration]

    @property
    def version(self) -> int:
        return self.applied[-1].version if self.applied else 0

    @property
    def latest(self) -> int:
        return max((m.version for m in migrations()), default=0)

    @property
    def up_to_date(self) -> bool:
        return self.installed and not self.pending


def migrations() -> list[Migration]:
    """Return the package's migrations in order, checking that they are numbered 1..N."""
    folder = resources.files("pgmbus").joinpath("sql", "migrations")
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _FILE_NAME.match(entry.name)
        if match is None:
            continue
        text: LiteralString = entry.read_text("utf-8")
        found.append(Migration(int(match.group(1)), match.group(2), text))
    found.sort(key=lambda m: m.version)
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise SchemaError(
                f"package migrations are not numbered 1..N: expected {expected:04d}, "
                f"found {migration.version:04d}_{migration.name}.sql"
            )
    return found


def _queries() -> dict[str, LiteralString]:
    return load_queries("schema.sql")


def _read_applied(conn: psycopg.Connection[Any]) -> list[AppliedMigration] | None:
    """Read the ledger (None when there is none); a transaction this read opened is ended."""
    q = _queries()
    was_idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    try:
        row = conn.execute(q["ledger_exists"]).fetchone()
        if row is None or not row[0]:
            return None
        return [AppliedMigration(*r) for r in conn.execute(q["applied"]).fetchall()]
    finally:
        if was_idle and not conn.autocommit:
            conn.rollback()


def _verify(applied: list[AppliedMigration], known: list[Migration]) -> list[Migration]:
    """Refuse a newer or edited schema; return the migrations still to apply."""
    by_version = {m.version: m for m in known}
    latest = max(by_version, default=0)
    for row in applied:
        migration = by_version.get(row.version)
        if migration is None:
            raise SchemaTooNewError(
                f"the database's mbus schema is at migration {row.version:04d}_{row.name} "
                f"(applied by pgmbus {row.package_version}) but this package (pgmbus "
                f"{__version__}) knows migrations up to {latest:04d}; upgrade pgmbus"
            )
        if migration.checksum != row.checksum:
            raise MigrationChecksumError(
                f"migration {row.version:04d}_{row.name} applied to this database differs from "
                f"the package's file (checksum {row.checksum[:12]}… in the database, "
                f"{migration.checksum[:12]}… in the package); the migration was edited after "
                "it was applied, refusing to go on"
            )
    done = {row.version for row in applied}
    return [m for m in known if m.version not in done]


def status(conn: psycopg.Connection[Any]) -> SchemaStatus:
    """Report the database's schema state; raises when it is newer than or differs from ours."""
    known = migrations()
    applied = _read_applied(conn)
    if applied is None:
        return SchemaStatus(installed=False, applied=[], pending=known)
    return SchemaStatus(installed=True, applied=applied, pending=_verify(applied, known))


def check(conn: psycopg.Connection[Any]) -> SchemaStatus:
    """Like ``status`` but raises unless the schema is installed and current."""
    current = status(conn)
    if not current.installed:
        raise SchemaNotInstalledError("the database has no mbus schema; run `pgmbus install`")
    if current.pending:
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in current.pending)
        raise SchemaError(f"the mbus schema is behind this package ({names}); run `pgmbus upgrade`")
    return current


def install(conn: psycopg.Connection[Any], *, target: int | None = None) -> list[Migration]:
    """Create the schema or bring it up to date; return the migrations applied now.

    Parameters
    ----------
    conn:
        A connection that is not inside a transaction; each migration runs in a transaction of
        its own. Its autocommit setting is restored afterwards.
    target:
        Apply migrations up to this version only (used to test step-by-step upgrades).
    """
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise SchemaError("install needs a connection that is not inside a transaction")
    known = migrations()
    if target is not None:
        known = [m for m in known if m.version <= target]
    q = _queries()
    was_autocommit = conn.autocommit
    conn.autocommit = True
    try:
        conn.execute(q["lock"], {"key": INSTALL_LOCK_KEY})
        try:
            with conn.transaction():
                conn.execute(read_sql("bootstrap.sql"))
            applied = _read_applied(conn) or []
            pending = _verify(applied, migrations())
            todo = [m for m in pending if m in known]
            for migration in todo:
                with conn.transaction():
                    conn.execute(migration.sql)
                    conn.execute(
                        q["record"],
                        {
                            "version": migration.version,
                            "name": migration.name,
                            "checksum": migration.checksum,
                            "package_version": __version__,
                        },
                    )
            return todo
        finally:
            conn.execute(q["unlock"], {"key": INSTALL_LOCK_KEY})
    finally:
        conn.autocommit = was_autocommit


def upgrade(conn: psycopg.Connection[Any]) -> list[Migration]:
    """Apply pending migrations to an installed schema (refuses a database without one)."""
    idle = psycopg.pq.TransactionStatus.IDLE
    if conn.info.transaction_status != idle:
        raise SchemaError("upgrade needs a connection that is not inside a transaction")
    applied = _read_applied(conn)
    if applied is None:
        raise SchemaNotInstalledError("the database has no mbus schema; run `pgmbus install`")
    return install(conn)
