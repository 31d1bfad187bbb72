"""Install, upgrade and check the ``mbus`` schema: migrations, then the function files.

The schema has two kinds of SQL, kept apart so that each thing has one home:

* ``sql/migrations/NNNN_name.sql`` hold tables, types, indexes, data moves and DROPs. Each is
  applied once and recorded in ``mbus.schema_migrations`` with the sha256 of its text; an
  applied migration is never edited (a changed file is refused).
* ``sql/functions/<engine>/<name>.sql`` hold every function and view as ``CREATE OR REPLACE``,
  applied in the order of ``sql/functions/ORDER`` by every install or upgrade that finds them
  different from what the database has, followed by the generated per-queue functions and
  ``mbus.restrict_public_execute()``. A checksum of the files and a digest of the resulting
  catalog are kept in ``mbus.schema_functions``, so :func:`status` can tell whether the
  installed functions are this package's.

Installers are serialized by a session advisory lock and do all their work in one transaction,
so two of them at once apply every migration exactly once, and a failure leaves the database
as it was. A database that has migrations this package does not know is refused. A database
made by the pre-release 0.1 layout (functions inside migrations 0001-0009) is converted when
it is complete, refused with instructions otherwise.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from typing import Any, LiteralString

import psycopg

from pgmbus import __version__
from pgmbus.data.install import SCHEMA
from pgmbus.errors import (
    MigrationChecksumError,
    SchemaError,
    SchemaNotInstalledError,
    SchemaTooNewError,
)
from pgmbus.sqlfiles import read_sql

# pg_advisory_lock key of the installer: the bytes of 'mbus' read as an integer.
INSTALL_LOCK_KEY = 0x6D627573
_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_DEFINES = re.compile(
    r"^CREATE OR REPLACE (FUNCTION|PROCEDURE|VIEW) mbus\.([a-z_][a-z0-9_]*)\b", re.MULTILINE
)
# trigger names the SQL files make, directly or in a generator's format() string
_TRIGGERS = re.compile(r"\bCREATE (?:OR REPLACE )?(?:CONSTRAINT )?TRIGGER ([a-z_][a-z0-9_]*)\b")

# The baseline migrations 0001-0005 hold exactly what the 0.1 layout had at its last migration.
BASELINE = 5
# The pre-release 0.1 layout: migrations 0001-0009 as they were applied (name, sha256).
LEGACY_LAYOUT: dict[int, tuple[str, str]] = {
    1: ("base", "3b7cb9260e8e45ca8700919c8f75b9bf7f18fee71338a2787f800abb5f07b559"),
    2: ("queues", "84b421cc2855c1433a78a206995d07e7bf004e917cb563000961f90ea62ac8be"),
    3: ("streams", "59c1739e323aabad5af7bac753254ec1e68e22ebedc258f9fc03f5a6a7bacf15"),
    4: ("timers", "496cd6dc7b6354c18e4d0e4a1014e721e28a3164e3b74ad47f25f9d59bdc3060"),
    5: ("spark", "1bd984ef27f87de9a9bde4a3a30d136b578857d4faa11c327524737aec888b32"),
    6: ("queues_segments", "98c1c0aca4c64b5486e3c5aed6c5208856ddb88c1d86942ab72a2a6d354d2790"),
    7: ("spark_read_staged", "5316c5bc59ade7dfc69ec7c4b1902d5dc9386a2f52f51402491b45eb172cfa39"),
    8: ("timers_claim_ahead", "a7c95ee6e8c98d9500512f2e2e7819d2c061f0243e2b6732c0399c091301f911"),
    9: ("timers_change_notify", "e38727d693085cb96ca1d82c30ad36a2fae7c1b31ccd26401bc5e519dfa57d05"),
}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Migration:
    """One numbered migration file shipped in the package."""

    version: int
    name: str
    sql: LiteralString = field(repr=False)

    @property
    def checksum(self) -> str:
        return _sha256(self.sql)


@dataclass(frozen=True)
class FunctionFile:
    """One file of ``sql/functions/``: the functions and views it defines."""

    path: str
    sql: LiteralString = field(repr=False)
    functions: tuple[str, ...]
    views: tuple[str, ...]


@dataclass(frozen=True)
class FunctionSet:
    """Every function file in the order they are applied, and their checksum."""

    files: tuple[FunctionFile, ...]

    @property
    def checksum(self) -> str:
        digest = hashlib.sha256()
        for f in self.files:
            digest.update(f"{f.path}\n{_sha256(f.sql)}\n".encode())
        return digest.hexdigest()

    @property
    def functions(self) -> list[str]:
        return sorted({name for f in self.files for name in f.functions})

    @property
    def views(self) -> list[str]:
        return sorted({name for f in self.files for name in f.views})

    @property
    def triggers(self) -> list[str]:
        return sorted({name for f in self.files for name in _TRIGGERS.findall(f.sql)})


@dataclass(frozen=True)
class AppliedMigration:
    """A row of ``mbus.schema_migrations``."""

    version: int
    name: str
    checksum: str
    package_version: str
    applied_at: datetime


@dataclass(frozen=True)
class InstalledFunctions:
    """The row of ``mbus.schema_functions`` and how it compares with the package and catalog."""

    checksum: str
    package_version: str
    installed_at: datetime
    matches_package: bool
    matches_catalog: bool


@dataclass(frozen=True)
class Leftover:
    """A function, view or trigger in ``mbus`` that no SQL file defines and no queue generates."""

    kind: str
    name: str
    ddl: str = field(repr=False)


@dataclass(frozen=True)
class SchemaStatus:
    """Where a database stands against this package's migrations and function files."""

    installed: bool
    applied: list[AppliedMigration]
    pending: list[Migration]
    functions: InstalledFunctions | None = None
    legacy: bool = False
    leftovers: list[Leftover] = field(default_factory=list)

    @property
    def version(self) -> int:
        return self.applied[-1].version if self.applied else 0

    @property
    def latest(self) -> int:
        return max((m.version for m in migrations()), default=0)

    @property
    def functions_current(self) -> bool:
        f = self.functions
        return f is not None and f.matches_package and f.matches_catalog

    @property
    def up_to_date(self) -> bool:
        return (
            self.installed
            and not self.pending
            and not self.legacy
            and self.functions_current
            and not self.leftovers
        )


@dataclass(frozen=True)
class InstallResult:
    """What one install or upgrade did."""

    migrations: list[Migration] = field(default_factory=list)
    functions_applied: bool = False
    converted_legacy: bool = False
    removed: list[Leftover] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return (
            bool(self.migrations)
            or self.functions_applied
            or self.converted_legacy
            or bool(self.removed)
        )


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


@functools.cache
def function_set() -> FunctionSet:
    """Return the function files in the order of ``sql/functions/ORDER``.

    Raises ``SchemaError`` when ORDER names a missing file, names one twice, or leaves one out.
    """
    folder = resources.files("pgmbus").joinpath("sql", "functions")
    order = [
        line.strip()
        for line in folder.joinpath("ORDER").read_text("utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if len(set(order)) != len(order):
        twice = sorted({p for p in order if order.count(p) > 1})
        raise SchemaError(f"sql/functions/ORDER lists {', '.join(twice)} more than once")
    present = {
        f"{engine.name}/{entry.name}"
        for engine in folder.iterdir()
        if engine.is_dir()
        for entry in engine.iterdir()
        if entry.name.endswith(".sql")
    }
    if missing := sorted(set(order) - present):
        raise SchemaError(f"sql/functions/ORDER names missing files: {', '.join(missing)}")
    if unlisted := sorted(present - set(order)):
        raise SchemaError(f"sql/functions/ORDER does not list: {', '.join(unlisted)}")
    files = []
    for path in order:
        text: LiteralString = read_sql(f"functions/{path}")
        defined = _DEFINES.findall(text)
        files.append(
            FunctionFile(
                path=path,
                sql=text,
                functions=tuple(n for kind, n in defined if kind != "VIEW"),
                views=tuple(n for kind, n in defined if kind == "VIEW"),
            )
        )
    return FunctionSet(tuple(files))


def _queries() -> dict[str, LiteralString]:
    return SCHEMA


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


def _is_legacy(applied: list[AppliedMigration]) -> bool:
    """Whether the ledger is (a prefix of) the pre-release 0.1 layout's."""
    return bool(applied) and all(
        LEGACY_LAYOUT.get(row.version) == (row.name, row.checksum) for row in applied
    )


def _refuse_partial_legacy(applied: list[AppliedMigration]) -> None:
    last = applied[-1]
    if last.version < max(LEGACY_LAYOUT):
        raise SchemaError(
            f"this database's mbus schema was made by the pre-release 0.1 layout and stops at "
            f"its migration {last.version:04d}_{last.name}; this pgmbus converts only a complete "
            "0.1 schema (through 0009_timers_change_notify). Upgrade it first with the 0.1 "
            "package (git commit eb87afd, `pgmbus upgrade`), or, if its data can go, run "
            "DROP SCHEMA mbus CASCADE and `pgmbus install`"
        )


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


def _catalog_digest(conn: psycopg.Connection[Any], functions: FunctionSet) -> str:
    row = conn.execute(
        _queries()["catalog_digest"], {"functions": functions.functions, "views": functions.views}
    ).fetchone()
    return str(row[0]) if row else ""


def _installed_functions(conn: psycopg.Connection[Any]) -> InstalledFunctions | None:
    row = conn.execute(_queries()["functions_recorded"]).fetchone()
    if row is None:
        return None
    checksum, digest, package_version, installed_at = row
    package = function_set()
    return InstalledFunctions(
        checksum=checksum,
        package_version=package_version,
        installed_at=installed_at,
        matches_package=checksum == package.checksum,
        matches_catalog=digest == _catalog_digest(conn, package),
    )


def leftovers(conn: psycopg.Connection[Any], *, fresh: bool = False) -> list[Leftover]:
    """Functions, views and triggers in ``mbus`` that no file defines and no queue generates.

    ``fresh`` is for the transaction that has just applied the function files: then a function
    of a file's name that the transaction did not write (an old overload) is one too.
    """
    functions = function_set()
    rows = conn.execute(
        _queries()["leftovers"],
        {
            "functions": functions.functions,
            "views": functions.views,
            "triggers": functions.triggers,
            "fresh": fresh,
        },
    ).fetchall()
    return [Leftover(kind, name, ddl) for kind, name, ddl in rows]


def status(conn: psycopg.Connection[Any]) -> SchemaStatus:
    """Report the database's schema state; raises when it is newer than or differs from ours."""
    known = migrations()
    applied = _read_applied(conn)
    if applied is None:
        return SchemaStatus(installed=False, applied=[], pending=known)
    if _is_legacy(applied):
        return SchemaStatus(installed=True, applied=applied, pending=known, legacy=True)
    pending = _verify(applied, known)
    was_idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    try:
        installed = _installed_functions(conn)
        left = [] if pending else leftovers(conn)
    finally:
        if was_idle and not conn.autocommit:
            conn.rollback()
    return SchemaStatus(
        installed=True, applied=applied, pending=pending, functions=installed, leftovers=left
    )


def check(conn: psycopg.Connection[Any]) -> SchemaStatus:
    """Like ``status`` but raises unless the schema is installed and current."""
    current = status(conn)
    if not current.installed:
        raise SchemaNotInstalledError("the database has no mbus schema; run `pgmbus install`")
    if current.legacy:
        raise SchemaError(
            "the mbus schema has the pre-release 0.1 layout; run `pgmbus upgrade` to convert it"
        )
    if current.pending:
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in current.pending)
        raise SchemaError(f"the mbus schema is behind this package ({names}); run `pgmbus upgrade`")
    if not current.functions_current:
        raise SchemaError(
            "the mbus functions in the database differ from this package's; run `pgmbus upgrade`"
        )
    return current


def _convert_legacy(conn: psycopg.Connection[Any], known: list[Migration]) -> None:
    """Turn a complete 0.1 schema into the baseline: drop what is gone, rewrite the ledger.

    The baseline migrations are recorded as applied; later ones are applied as usual.
    """
    conn.execute(read_sql("convert_0_1_layout.sql"))
    for migration in known:
        if migration.version <= BASELINE:
            _record(conn, migration)


def _record(conn: psycopg.Connection[Any], migration: Migration) -> None:
    conn.execute(
        _queries()["record"],
        {
            "version": migration.version,
            "name": migration.name,
            "checksum": migration.checksum,
            "package_version": __version__,
        },
    )


def _apply_functions(conn: psycopg.Connection[Any]) -> list[Leftover]:
    """Every function file in order, the generated queue functions, then PUBLIC's EXECUTE.

    What the files and the queues no longer make is dropped (and returned): no migration has
    to drop a function that a release removed or renamed.
    """
    q = _queries()
    functions = function_set()
    for f in functions.files:
        conn.execute(f.sql)
    conn.execute(q["regenerate_queues"])
    removed = leftovers(conn, fresh=True)
    for leftover in removed:
        # built in SQL with format('%I') and regprocedure/regclass output (quoted names)
        conn.execute(leftover.ddl.encode())
    conn.execute(q["first_partitions"])
    conn.execute(q["condition_sandbox"])
    conn.execute(q["restrict_public_execute"])
    conn.execute(
        q["record_functions"],
        {
            "checksum": functions.checksum,
            "catalog_digest": _catalog_digest(conn, functions),
            "package_version": __version__,
        },
    )
    return removed


def install(conn: psycopg.Connection[Any], *, target: int | None = None) -> InstallResult:
    """Create the schema or bring it up to date; return what was done.

    Parameters
    ----------
    conn:
        A connection that is not inside a transaction; the work runs in one transaction of
        its own. Its autocommit setting is restored afterwards.
    target:
        Apply migrations up to this version only, without the function files (used to test
        step-by-step upgrades); the functions follow with the last migration.

    Returns
    -------
    InstallResult
        The migrations applied now, whether the function files were applied, and whether a
        pre-release 0.1 schema was converted. Nothing changed when the schema was current.
    """
    if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise SchemaError("install needs a connection that is not inside a transaction")
    known = migrations()
    latest = max(m.version for m in known)
    q = _queries()
    was_autocommit = conn.autocommit
    conn.autocommit = True
    try:
        conn.execute(q["lock"], {"key": INSTALL_LOCK_KEY})
        try:
            with conn.transaction():
                conn.execute(read_sql("bootstrap.sql"))
                applied = _read_applied(conn) or []
                converted = False
                if _is_legacy(applied):
                    _refuse_partial_legacy(applied)
                    _convert_legacy(conn, known)
                    applied, converted = _read_applied(conn) or [], True
                pending = _verify(applied, known)
                todo = [m for m in pending if target is None or m.version <= target]
                for migration in todo:
                    conn.execute(migration.sql)
                    _record(conn, migration)
                reached = max([r.version for r in applied] + [m.version for m in todo] or [0])
                functions_applied = False
                removed: list[Leftover] = []
                if reached == latest:
                    current = _installed_functions(conn)
                    if (
                        todo
                        or converted
                        or current is None
                        or not (current.matches_package and current.matches_catalog)
                        or leftovers(conn)
                    ):
                        removed = _apply_functions(conn)
                        functions_applied = True
            return InstallResult(todo, functions_applied, converted, removed)
        finally:
            conn.execute(q["unlock"], {"key": INSTALL_LOCK_KEY})
    finally:
        conn.autocommit = was_autocommit


def upgrade(conn: psycopg.Connection[Any]) -> InstallResult:
    """Bring an installed schema up to date (refuses a database without one)."""
    idle = psycopg.pq.TransactionStatus.IDLE
    if conn.info.transaction_status != idle:
        raise SchemaError("upgrade needs a connection that is not inside a transaction")
    applied = _read_applied(conn)
    if applied is None:
        raise SchemaNotInstalledError("the database has no mbus schema; run `pgmbus install`")
    return install(conn)
