"""The part-two CLI: waiting messages, views, temporary-queue collection, saga list."""

from __future__ import annotations

import json

import psycopg
from psycopg.types.json import Jsonb
from typer.testing import CliRunner

from pgmbus.cli import app


def test_waiting_view_clear_temp_and_saga_list(autodb: str) -> None:
    """`pgmbus queue waiting|view|clear-temp` and `pgmbus saga list` show part two's state."""
    runner = CliRunner()
    with psycopg.connect(autodb, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue('other', 1)")
        dep = conn.execute("SELECT mbus.post_jobs('{}')").fetchone()
        assert dep is not None
        conn.execute("SELECT mbus.post_other('{}', %s)", (Jsonb({"consume_after": [dep[0]]}),))
        conn.execute(
            "SELECT mbus.saga_start('demo', %s)",
            (Jsonb([{"step": "one", "queue": "jobs", "compensate": "other"}]),),
        )
    out = runner.invoke(app, ["queue", "waiting", "--json", "--dsn", autodb])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert next(r["waits_for"] for r in rows if r["qname"] == "other") == [dep[0]]
    out = runner.invoke(app, ["queue", "view", "jobs", "--dsn", autodb])
    assert out.exit_code == 0 and out.output.strip() == "public.jobs_q", out.output
    out = runner.invoke(app, ["queue", "clear-temp", "--dsn", autodb])
    assert out.exit_code == 0 and "0 temporary" in out.output, out.output
    out = runner.invoke(app, ["saga", "list", "--json", "--dsn", autodb])
    assert out.exit_code == 0, out.output
    (saga,) = json.loads(out.output)
    assert saga["state"] == "running"
    assert saga["steps"] == {"one": {"forward": "pending", "compensation": "waiting"}}
