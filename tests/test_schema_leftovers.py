"""Functions, views and triggers in mbus that no SQL file defines: status names them, upgrade
drops them (so no migration has to drop what a release removed or renamed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import psycopg
from typer.testing import CliRunner

from pgmbus import schema
from pgmbus.cli import app
from pgmbus.queues import Bus

runner = CliRunner()

LEFT_BEHIND = """
CREATE FUNCTION mbus.renamed_long_ago(n int) RETURNS int LANGUAGE sql RETURN n;
CREATE FUNCTION mbus.old_trigger_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RETURN NEW; END $$;
CREATE TRIGGER old_touch BEFORE UPDATE ON mbus.queue FOR EACH ROW
    EXECUTE FUNCTION mbus.old_trigger_fn();
CREATE VIEW mbus.old_overview AS SELECT qname FROM mbus.queue;
-- an old overload of a name the files still define
CREATE FUNCTION mbus.consume(qname text, legacy_flag boolean) RETURNS int
    LANGUAGE sql RETURN 1;
"""


def status_json(dsn: str) -> dict[str, Any]:
    result = runner.invoke(app, ["status", "--dsn", dsn, "--json"])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.output))


def test_a_fresh_install_with_queues_and_capture_has_no_leftovers(db_dsn: str) -> None:
    with Bus(db_dsn) as bus:
        bus.create_queue("jobs")
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_consumer('jobs', 'picky', 'true')")
        conn.execute("CREATE TABLE items (id int PRIMARY KEY)")
        conn.execute("SELECT mbus.capture_table('public.items')")
        assert schema.leftovers(conn) == []
        assert schema.status(conn).up_to_date
    assert status_json(db_dsn)["leftovers"] == []


def test_status_names_leftovers_and_upgrade_drops_them(db_dsn: str) -> None:
    with Bus(db_dsn) as bus:
        bus.create_queue("jobs")
        bus.post("jobs", {"n": 1})
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(LEFT_BEHIND.encode())
    report = status_json(db_dsn)
    assert report["up_to_date"] is False
    assert {(x["kind"], x["name"]) for x in report["leftovers"]} >= {
        ("function", "mbus.renamed_long_ago(integer)"),
        ("function", "mbus.old_trigger_fn()"),
        ("view", "mbus.old_overview"),
        ("trigger", "old_touch on mbus.queue"),
    }
    text = runner.invoke(app, ["status", "--dsn", db_dsn])
    assert "leftover view mbus.old_overview" in text.output
    assert "run `pgmbus upgrade` to remove them" in text.output or "run `pgmbus upgrade`" in (
        text.output
    )

    done = runner.invoke(app, ["upgrade", "--dsn", db_dsn])
    assert done.exit_code == 0, done.output
    for name in (
        "mbus.renamed_long_ago(integer)",
        "mbus.old_overview",
        "mbus.consume(text,boolean)",
    ):
        assert "removed the leftover" in done.output and name in done.output, done.output
    after = status_json(db_dsn)
    assert after["up_to_date"] is True and after["leftovers"] == []
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        overloads = conn.execute(
            "SELECT count(*) FROM pg_proc WHERE proname = 'consume'"
            " AND pronamespace = 'mbus'::regnamespace"
        ).fetchone()
        assert overloads == (1,)
    with Bus(db_dsn) as bus:  # the queue and its generated functions survived
        [message] = bus.consume("jobs")
        assert message.data == {"n": 1}


def test_a_leftover_something_else_uses_stops_the_upgrade_and_changes_nothing(
    make_db: Callable[..., str],
) -> None:
    dsn = make_db()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION mbus.still_used() RETURNS int LANGUAGE sql RETURN 7")
        conn.execute("CREATE VIEW public.mine AS SELECT mbus.still_used() AS v")
    done = runner.invoke(app, ["upgrade", "--dsn", dsn])
    assert done.exit_code == 1 and "depend" in done.output, done.output
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT v FROM public.mine").fetchone() == (7,)
        [left] = schema.leftovers(conn)
        assert left.name == "mbus.still_used()"
