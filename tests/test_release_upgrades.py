"""Every released schema upgrades to this package's: the catalog of a fresh install, data kept.

Each folder of tests/fixtures/releases holds what ``scripts/release_fixture.py`` made with that
release's code: ``schema.sql`` (a fresh install: its schema and ledger) and ``data.sql`` (a
database with a queue, a stream group and timers made by that release's API). The test restores
each with psql, runs ``pgmbus upgrade`` and compares.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from typer.testing import CliRunner

from pgmbus import schema
from pgmbus.cli import app
from pgmbus.devdb import find_bindir
from pgmbus.queues import Bus
from pgmbus.testing.server import TestServer
from tests.catalog import describe, differences

RELEASES = Path(__file__).parent / "fixtures" / "releases"
FIXTURES = sorted(p for p in RELEASES.iterdir() if (p / "release.json").exists())
runner = CliRunner()


def restore(dsn: str, dump: Path) -> None:
    done = subprocess.run(
        [
            str(find_bindir() / "psql"),
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            dsn,
            "-f",
            str(dump),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def upgrade(dsn: str) -> str:
    result = runner.invoke(app, ["upgrade", "--dsn", dsn])
    assert result.exit_code == 0, result.output
    status = runner.invoke(app, ["status", "--dsn", dsn, "--json"])
    assert status.exit_code == 0 and json.loads(status.output)["up_to_date"], status.output
    return result.output


@pytest.fixture
def named_db(pg_server: TestServer) -> Iterator[Callable[[str], str]]:
    """Databases of a given name (the fixture's roles carry its database's name)."""
    made: list[str] = []

    def make(name: str) -> str:
        with psycopg.connect(pg_server.admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        made.append(name)
        return pg_server.dsn(name)

    yield make
    for name in made:
        pg_server.drop_database(name)


def test_there_is_a_fixture_per_release() -> None:
    versions = [json.loads((p / "release.json").read_text())["version"] for p in FIXTURES]
    assert "0.1.0" in versions
    assert [p.name for p in FIXTURES] == versions


@pytest.mark.parametrize("release", FIXTURES, ids=lambda p: p.name)
def test_a_release_schema_upgrades_to_the_catalog_of_a_fresh_install(
    release: Path, make_db: Callable[..., str]
) -> None:
    old = make_db(installed=False)
    restore(old, release / "schema.sql")
    before = json.loads((release / "release.json").read_text())["schema_version"]
    with psycopg.connect(old) as conn:
        assert schema.status(conn).version == before
    upgrade(old)
    fresh = make_db()
    with psycopg.connect(old) as a, psycopg.connect(fresh) as b:
        upgraded, installed = describe(a), describe(b)
    assert len(installed) > 100
    assert not differences(upgraded, installed), "\n".join(differences(upgraded, installed))


@pytest.mark.parametrize("release", FIXTURES, ids=lambda p: p.name)
def test_a_release_data_set_is_still_consumable_after_upgrade(
    release: Path, named_db: Callable[[str], str], pg_server: TestServer
) -> None:
    with psycopg.connect(pg_server.admin_dsn, autocommit=True) as admin:
        for role in (release / "roles.txt").read_text().split():
            exists = admin.execute("SELECT FROM pg_roles WHERE rolname = %s", [role]).fetchone()
            if exists is None:  # roles live in the cluster, not in a database's dump
                admin.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
    dsn = named_db("pgmbus_fixture")
    restore(dsn, release / "data.sql")
    upgrade(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        # restored into another cluster: the log's transaction ids are repaired first (MB009),
        # which hands the group's unread events to its retry path (docs/streams.md)
        conn.execute("SELECT * FROM mbus.repair_after_restore()")
        events = conn.execute(
            "SELECT payload FROM mbus.read_retries('fx_billing') ORDER BY id"
        ).fetchall()
        assert [e[0]["n"] for e in events] == [4, 5]  # after the committed cursor, nothing lost
        assert conn.execute("SELECT * FROM mbus.read_next('fx_billing')").fetchall() == []
        client = conn.execute(
            "SELECT id FROM mbus.timer_clients WHERE name = 'fx_client'"
        ).fetchone()
        assert client is not None
        for event in ("e1", "e2"):
            row = conn.execute("SELECT mbus.timer_get(%s, 'fx', %s)", [client[0], event]).fetchone()
            assert row is not None and row[0]["status"] == "pending", row
    with Bus(dsn) as bus:
        got = [m.data["n"] for m in bus.consume("fx_jobs")]
        got += [m.data["n"] for m in bus.consume("fx_jobs")]
        assert got == [2, 3]
        assert bus.consume("fx_jobs") == []


def test_the_catalog_description_sees_what_an_upgrade_could_get_wrong(
    make_db: Callable[..., str],
) -> None:
    """The comparison is not blind: a changed function, a missing index, an extra column and a
    changed grant each show up by name."""
    a, b = make_db(), make_db()
    with psycopg.connect(a) as left, psycopg.connect(b, autocommit=True) as right:
        assert differences(describe(left), describe(right)) == []
        right.execute("ALTER FUNCTION mbus.get_setting(text, jsonb) SET work_mem = '1MB'")
        index = right.execute(
            "SELECT i.indexrelid::regclass::text FROM pg_index AS i"
            " JOIN pg_class AS c ON c.oid = i.indexrelid"
            " WHERE c.relnamespace = 'mbus'::regnamespace AND c.relkind = 'i'"
            " AND NOT c.relispartition"
            " AND NOT EXISTS (SELECT FROM pg_constraint AS k WHERE k.conindid = i.indexrelid)"
            " ORDER BY 1 LIMIT 1"
        ).fetchone()
        assert index is not None
        right.execute(f"DROP INDEX {index[0]}".encode())
        right.execute("ALTER TABLE mbus.queue ADD COLUMN extra int")
        right.execute("GRANT SELECT ON mbus.queue TO PUBLIC")
        found = differences(describe(left), describe(right))
    text = "\n".join(found)
    assert "differs: function mbus.get_setting(text,jsonb)" in text
    assert f"only in the first: relation {index[0].removeprefix('mbus.')}" in text
    assert "only in the second: column queue.extra" in text
    assert "differs: relation queue" in text
