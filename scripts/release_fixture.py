"""Make the upgrade fixture of a release: its schema and a small data set, as pg_dump files.

Run it with the RELEASED code on the path (not the working tree), once per release:

    git archive v0.2.0 | tar -x -C /tmp/release        # the tag, or the release's commit
    PYTHONPATH=/tmp/release/src .venv/bin/python scripts/release_fixture.py \\
        --out tests/fixtures/releases/0.2.0

It starts a throwaway embedded PostgreSQL and writes into ``--out``:

- ``schema.sql``: ``pg_dump`` of a fresh install of that version: its schema and the rows an
  install writes (the migration ledger among them; without it no upgrade can tell the version);
- ``data.sql``: ``pg_dump`` (schema and data) of a database where that version's API made the
  data set below: a queue with messages, a stream group with a committed cursor and events after
  it, a timers client with callbacks;
- ``roles.txt``: the roles the dumps grant to (roles are not in a database's dump: the test
  creates them before restoring, as ``pg_dumpall --globals-only`` would);
- ``release.json``: the version and its schema version.

``tests/test_release_upgrades.py`` restores every fixture under tests/fixtures/releases, runs
``pgmbus upgrade`` and checks the catalog against a fresh install and the data set (the values
below are what it expects: keep them stable across releases).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import psycopg
from psycopg import sql

import pgmbus
from pgmbus import schema
from pgmbus.devdb import find_bindir
from pgmbus.queues import Bus
from pgmbus.testing.server import TestServer

# the databases' names are fixed: per-queue role names contain the database's name, and the test
# restores into a database of the same name
DATABASE = "pgmbus_fixture"
FRESH = "pgmbus_fixture_fresh"
QUEUE = "fx_jobs"
GROUP = "fx_billing"
TOPIC = "fx.orders"
CLIENT = "fx_client"


def make_data_set(dsn: str) -> None:
    """The data set, through the release's API (the Python Bus and the SQL functions)."""
    with Bus(dsn) as bus:
        bus.create_queue(QUEUE)
        for n in (1, 2, 3):
            bus.post(QUEUE, {"n": n})
        [first] = bus.consume(QUEUE)
        if first.data != {"n": 1}:
            raise SystemExit(f"the queue gave {first.data} first")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_group(%s)", [GROUP])
        for n in (1, 2, 3):
            conn.execute("SELECT mbus.publish(%s, %s, %s)", [TOPIC, json.dumps({"n": n}), "k"])
        with conn.transaction():
            batch = conn.execute("SELECT cursor, payload FROM mbus.read_next(%s)", [GROUP])
            read = batch.fetchall()
            if [r[1]["n"] for r in read] != [1, 2, 3]:
                raise SystemExit(f"the group read {read}")
            conn.execute("SELECT mbus.commit(%s, %s)", [GROUP, read[-1][0]])
        for n in (4, 5):  # after the cursor: what the group reads next
            conn.execute("SELECT mbus.publish(%s, %s, %s)", [TOPIC, json.dumps({"n": n}), "k"])
        row = conn.execute("SELECT client_id FROM mbus.timer_add_client(%s)", [CLIENT]).fetchone()
        if row is None:
            raise SystemExit("no timers client")
        for event in ("e1", "e2"):
            conn.execute(
                "SELECT mbus.timer_create(%s, 'fx', %s, '2100-01-01T00:00:00Z',"
                " 'https://example.org/hook')",
                [row[0], event],
            )


def pg_dump(dsn: str, out: Path, *extra: str) -> None:
    dump = find_bindir() / "pg_dump"
    text = subprocess.run(
        [str(dump), "--no-owner", *extra, "--dbname", dsn],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    out.write_text(text)


def create_database(server: TestServer, name: str) -> str:
    with psycopg.connect(server.admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return server.dsn(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the fixture's folder")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"pgmbus {pgmbus.__version__} from {Path(pgmbus.__file__).parent}", file=sys.stderr)
    server = TestServer.start()
    try:
        fresh = create_database(server, FRESH)
        with psycopg.connect(fresh) as conn:
            schema.install(conn)
            latest = schema.status(conn).version
        pg_dump(fresh, args.out / "schema.sql")
        data = create_database(server, DATABASE)
        with psycopg.connect(data) as conn:
            schema.install(conn)
        make_data_set(data)
        pg_dump(data, args.out / "data.sql")
        with psycopg.connect(data) as conn:
            roles = [
                r[0]
                for r in conn.execute(
                    "SELECT rolname FROM pg_roles WHERE shobj_description(oid, 'pg_authid')"
                    " LIKE 'made by pgmbus for database %' ORDER BY 1"
                )
            ]
        (args.out / "roles.txt").write_text("".join(f"{r}\n" for r in roles))
        (args.out / "release.json").write_text(
            json.dumps({"version": pgmbus.__version__, "schema_version": latest}, indent=2) + "\n"
        )
    finally:
        server.stop()
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
