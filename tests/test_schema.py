"""Schema migrations: install, upgrade, idempotence, concurrency, tamper and version checks."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable

import psycopg
import pytest

from pgmbus import schema
from pgmbus.devdb import find_bindir
from pgmbus.errors import (
    MigrationChecksumError,
    SchemaError,
    SchemaNotInstalledError,
    SchemaTooNewError,
)


def _catalog(dsn: str) -> str:
    """The mbus schema's DDL as pg_dump prints it (the catalog, in a comparable form)."""
    out = subprocess.run(
        [str(find_bindir() / "pg_dump"), "--schema-only", "--schema=mbus", "--no-owner", "-d", dsn],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    # pg_dump's \restrict lines carry a random key per run.
    skip = ("-- Dumped", "\\restrict", "\\unrestrict")
    return "\n".join(line for line in out.splitlines() if not line.startswith(skip))


def _ledger(dsn: str) -> list[tuple[int, str, str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT version, name, checksum FROM mbus.schema_migrations ORDER BY 1")
        return [(int(v), str(n), str(c)) for v, n, c in rows]


def test_package_migrations_are_numbered_and_checksummed() -> None:
    found = schema.migrations()
    assert [m.version for m in found] == list(range(1, len(found) + 1))
    assert all(len(m.checksum) == 64 for m in found)


def test_fresh_install_equals_step_by_step(make_db: Callable[..., str]) -> None:
    at_once = make_db(installed=False)
    stepwise = make_db(installed=False)
    with psycopg.connect(at_once) as conn:
        assert len(schema.install(conn)) == len(schema.migrations())
    with psycopg.connect(stepwise) as conn:
        for migration in schema.migrations():
            applied = schema.install(conn, target=migration.version)
            assert [m.version for m in applied] == [migration.version]
    assert _catalog(at_once) == _catalog(stepwise)
    assert _ledger(at_once) == _ledger(stepwise)


def test_install_twice_is_a_noop(make_db: Callable[..., str]) -> None:
    dsn = make_db(installed=False)
    with psycopg.connect(dsn) as conn:
        assert schema.install(conn)
        before = _ledger(dsn)
        assert schema.install(conn) == []
        assert schema.status(conn).up_to_date
    assert _ledger(dsn) == before


def test_two_concurrent_installs_apply_once(make_db: Callable[..., str]) -> None:
    dsn = make_db(installed=False)
    barrier = threading.Barrier(2)
    results: list[int] = []
    errors: list[BaseException] = []

    def installer() -> None:
        try:
            with psycopg.connect(dsn) as conn:
                barrier.wait()
                results.append(len(schema.install(conn)))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=installer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert sorted(results) == [0, len(schema.migrations())]
    assert [v for v, _, _ in _ledger(dsn)] == [m.version for m in schema.migrations()]


def test_tampered_migration_is_refused(db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(
            "UPDATE mbus.schema_migrations SET checksum = repeat('0', 64) WHERE version = 1"
        )
        with pytest.raises(MigrationChecksumError, match="edited after it was applied"):
            schema.install(conn)
        with pytest.raises(MigrationChecksumError):
            schema.status(conn)


def test_newer_database_schema_is_refused(db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO mbus.schema_migrations (version, name, checksum, package_version) "
            "VALUES (9999, 'from_the_future', repeat('a', 64), '99.0')"
        )
        with pytest.raises(SchemaTooNewError, match="upgrade pgmbus"):
            schema.install(conn)
        with pytest.raises(SchemaTooNewError, match="9999_from_the_future"):
            schema.check(conn)


def test_upgrade_and_check_refuse_a_database_without_schema(make_db: Callable[..., str]) -> None:
    dsn = make_db(installed=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        with pytest.raises(SchemaNotInstalledError, match="pgmbus install"):
            schema.upgrade(conn)
        with pytest.raises(SchemaNotInstalledError):
            schema.check(conn)
        assert not schema.status(conn).installed


def test_pending_migrations_are_reported_and_applied_by_upgrade(
    make_db: Callable[..., str],
) -> None:
    dsn = make_db(installed=False)
    with psycopg.connect(dsn) as conn:
        schema.install(conn, target=1)
        if len(schema.migrations()) > 1:
            current = schema.status(conn)
            assert [m.version for m in current.pending] == [
                m.version for m in schema.migrations()[1:]
            ]
            with pytest.raises(SchemaError, match="pgmbus upgrade"):
                schema.check(conn)
        schema.upgrade(conn)
        assert schema.check(conn).up_to_date


def test_install_refuses_a_connection_inside_a_transaction(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute("SELECT 1")
        with pytest.raises(SchemaError, match="not inside a transaction"):
            schema.install(conn)
