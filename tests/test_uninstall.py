"""`pgmbus uninstall --confirm <db>`: the schema, the roles made for the database and the pg_cron
job go; nothing of pgmbus is left in the catalog, and installing again works."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
from psycopg.conninfo import conninfo_to_dict
from typer.testing import CliRunner

from pgmbus import schedule
from pgmbus.cli import app
from pgmbus.queues import Bus
from tests.catalog import LEFTOVERS, describe

runner = CliRunner()


def leftovers(dsn: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [str(r[0]) for r in conn.execute(LEFTOVERS.encode()).fetchall()]


def test_uninstall_removes_schema_roles_and_cron_job_and_install_works_again(
    make_db: Callable[..., str],
) -> None:
    dsn = make_db()
    database = conninfo_to_dict(dsn)["dbname"]
    assert isinstance(database, str)
    with Bus(dsn) as bus:
        bus.create_queue("jobs")
        bus.post("jobs", {"n": 1})
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY)")
        conn.execute("SELECT mbus.capture_table('public.items')")
        conn.execute("SELECT mbus.create_group('billing')")
        conn.execute("INSERT INTO items VALUES (1)")
    schedule.schedule_upkeep(dsn)  # the test server preloads pg_cron
    before = leftovers(dsn)
    roles = sorted(r.removeprefix("role ") for r in before if r.startswith("role "))
    assert "schema mbus" in before and len(roles) >= 2, before  # post_jobs, consume_jobs_by_...

    missing = runner.invoke(app, ["uninstall", "--dsn", dsn])
    assert missing.exit_code == 2 and "Missing option '--confirm'" in missing.output
    wrong = runner.invoke(app, ["uninstall", "--dsn", dsn, "--confirm", "someone_else"])
    assert wrong.exit_code == 2 and "does not name the database" in wrong.output
    assert leftovers(dsn) == before and schedule.upkeep_job(dsn) is not None  # nothing changed

    done = runner.invoke(app, ["uninstall", "--dsn", dsn, "--confirm", database])
    assert done.exit_code == 0, done.output
    assert f"dropped schema mbus of database {database}" in done.output
    for role in roles:
        assert f"dropped role {role}" in done.output
    assert "dropped the trigger mbus_capture_row on items" in done.output
    assert "removed the pg_cron upkeep job" in done.output

    assert leftovers(dsn) == []
    assert schedule.upkeep_job(dsn) is None
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert describe(conn) == {}
        assert conn.execute("SELECT id FROM items").fetchall() == [(1,)]  # the user's data stays
        triggers = conn.execute("SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal")
        assert triggers.fetchone() == (0,)

    again = runner.invoke(app, ["uninstall", "--dsn", dsn, "--confirm", database])
    assert again.exit_code == 1 and "no mbus schema" in again.output

    assert runner.invoke(app, ["install", "--dsn", dsn]).exit_code == 0
    with Bus(dsn) as bus:
        bus.create_queue("jobs")
        bus.post("jobs", {"n": 2})
        [message] = bus.consume("jobs")
        assert message.data == {"n": 2}
    status = runner.invoke(app, ["status", "--dsn", dsn])
    assert status.exit_code == 0 and "up to date" in status.output
