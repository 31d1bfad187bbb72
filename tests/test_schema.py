"""Schema migrations: install, upgrade, idempotence, concurrency, tamper and version checks."""

from __future__ import annotations

import hashlib
import subprocess
import tarfile
import threading
from collections.abc import Callable
from pathlib import Path

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
from pgmbus.sqlfiles import read_sql


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
        assert len(schema.install(conn).migrations) == len(schema.migrations())
    with psycopg.connect(stepwise) as conn:
        for migration in schema.migrations():
            applied = schema.install(conn, target=migration.version).migrations
            assert [m.version for m in applied] == [migration.version]
    assert _catalog(at_once) == _catalog(stepwise)
    assert _ledger(at_once) == _ledger(stepwise)


def test_install_twice_is_a_noop(make_db: Callable[..., str]) -> None:
    dsn = make_db(installed=False)
    with psycopg.connect(dsn) as conn:
        assert schema.install(conn).changed
        before = _ledger(dsn)
        again = schema.install(conn)
        assert not again.changed
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
                results.append(len(schema.install(conn).migrations))
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


# --- the function files ---------------------------------------------------------------------


def test_install_records_the_function_set_and_status_says_it_matches(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        current = schema.status(conn)
        assert current.functions is not None
        assert current.functions.checksum == schema.function_set().checksum
        assert current.functions_current and current.up_to_date


def test_a_function_changed_by_hand_is_reported_and_restored_by_upgrade(db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE OR REPLACE FUNCTION mbus.get_setting(key text, fallback jsonb DEFAULT NULL) "
            "RETURNS jsonb LANGUAGE sql AS 'SELECT NULL::jsonb'"
        )
        current = schema.status(conn)
        assert current.functions is not None
        assert current.functions.matches_package and not current.functions.matches_catalog
        assert not current.up_to_date
        with pytest.raises(SchemaError, match="differ from this package"):
            schema.check(conn)
        result = schema.upgrade(conn)
        assert result.functions_applied and not result.migrations
        assert schema.check(conn).up_to_date
        conn.execute("SELECT mbus.set_setting('streams.partitions_ahead', '3')")
        assert conn.execute("SELECT mbus.get_setting('streams.partitions_ahead')").fetchone() == (
            3,
        )


def test_a_changed_function_set_is_applied_by_upgrade(db_dsn: str) -> None:
    """A package whose function files differ (simulated by the record) re-applies them all."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("UPDATE mbus.schema_functions SET checksum = repeat('0', 64)")
        assert not schema.status(conn).up_to_date
        assert schema.upgrade(conn).functions_applied
        assert schema.status(conn).up_to_date


def test_upgrade_regenerates_every_queue_and_restricts_public(db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue('golden', 1)")
        conn.execute(
            "DROP FUNCTION mbus.post_golden(jsonb, jsonb, jsonb, timestamptz, timestamptz, text,"
            " text, anycompatible, integer)"
        )
        conn.execute("CREATE FUNCTION mbus.stray_probe() RETURNS int LANGUAGE sql AS 'SELECT 1'")
        conn.execute("UPDATE mbus.schema_functions SET checksum = repeat('0', 64)")
        schema.upgrade(conn)
        iid = conn.execute("SELECT mbus.post_golden('{\"a\": 1}')").fetchone()
        assert iid is not None and str(iid[0]).startswith("golden.")
        # a function no file defines is dropped (a leftover), not kept and restricted
        gone = conn.execute("SELECT to_regprocedure('mbus.stray_probe()') IS NULL").fetchone()
        assert gone == (True,)
        public = conn.execute(
            "SELECT has_function_privilege('public', 'mbus.regenerate_queue(text)', 'EXECUTE')"
        ).fetchone()
        assert public == (False,)


# --- the pre-release 0.1 layout ----------------------------------------------------------------

_LEGACY = Path(__file__).parent / "fixtures" / "layout_0_1.tar.gz"


def _legacy_files() -> list[tuple[int, str, str]]:
    """Migrations 0001-0009 of the 0.1 layout (git eb87afd), as applied to databases then."""
    with tarfile.open(_LEGACY) as tar:
        found = []
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            stream = tar.extractfile(member)
            assert stream is not None
            version, name = member.name.removesuffix(".sql").split("_", 1)
            found.append((int(version), name, stream.read().decode("utf-8")))
    return found


def _install_legacy(dsn: str, upto: int = 9) -> None:
    """Install the 0.1 layout as its installer did: each migration and its ledger row."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(read_sql("bootstrap.sql"))
        conn.execute("DROP TABLE mbus.schema_functions")  # 0.1's bootstrap had no such table
        for version, name, text in _legacy_files()[:upto]:
            with conn.transaction():
                conn.execute(text.encode("utf-8"))
                conn.execute(
                    "INSERT INTO mbus.schema_migrations (version, name, checksum, package_version)"
                    " VALUES (%s, %s, %s, '0.1.0')",
                    (version, name, hashlib.sha256(text.encode("utf-8")).hexdigest()),
                )


def test_the_legacy_fixture_is_the_layout_the_package_recognises() -> None:
    found = {v: (n, hashlib.sha256(t.encode()).hexdigest()) for v, n, t in _legacy_files()}
    assert found == schema.LEGACY_LAYOUT


def test_a_legacy_database_is_converted_to_the_catalog_of_a_fresh_install(
    make_db: Callable[..., str],
) -> None:
    fresh = make_db(installed=False)
    legacy = make_db(installed=False)
    with psycopg.connect(fresh) as conn:
        schema.install(conn)
    _install_legacy(legacy)
    with psycopg.connect(legacy, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue('kept', 1)")
        conn.execute("SELECT mbus.post_kept('{\"n\": 1}')")
        current = schema.status(conn)
        assert current.legacy and not current.up_to_date
        with pytest.raises(SchemaError, match="pgmbus upgrade"):
            schema.check(conn)
        result = schema.upgrade(conn)
        assert result.converted_legacy and result.functions_applied
        assert schema.check(conn).up_to_date
        [(data,)] = conn.execute("SELECT data FROM mbus.consume('kept')").fetchall()
        assert data == {"n": 1}
        conn.execute("SELECT mbus.drop_queue('kept')")
    assert _catalog(legacy) == _catalog(fresh)
    assert _ledger(legacy) == _ledger(fresh)


def test_an_incomplete_legacy_database_is_refused_with_instructions(
    make_db: Callable[..., str],
) -> None:
    dsn = make_db(installed=False)
    _install_legacy(dsn, upto=5)
    with psycopg.connect(dsn, autocommit=True) as conn:
        with pytest.raises(SchemaError, match=r"0005_spark.*eb87afd.*DROP SCHEMA mbus CASCADE"):
            schema.upgrade(conn)
        assert [v for v, _, _ in _ledger(dsn)] == [1, 2, 3, 4, 5]
