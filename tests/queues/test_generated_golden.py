"""Golden files of the generated per-queue functions: a change to the generator is a diff.

The test builds a representative set of queues (a selective consumer, a trigger with a
selector, a queue under the roles security model, two consumers taking every message), dumps
``pg_get_functiondef`` of every function ``mbus.regenerate_queue`` made for them into
``tests/queues/golden/<name>.sql`` and compares. ``PGMBUS_UPDATE_GOLDEN=1 pytest
tests/queues/test_generated_golden.py`` rewrites the files; review their diff like any code
change.
"""

from __future__ import annotations

import os
from pathlib import Path

import psycopg

GOLDEN = Path(__file__).parent / "golden"


def _generated(conn: psycopg.Connection[tuple[object, ...]]) -> dict[str, str]:
    conn.execute("SELECT mbus.create_queue('golden', 1)")
    conn.execute(
        "SELECT mbus.create_consumer('golden', 'vip', $$(t.properties->>'tier') = 'gold'$$)"
    )
    conn.execute("SELECT mbus.create_queue('golden_audit', 1)")
    conn.execute("SELECT mbus.create_trigger('golden', 'golden_audit', $$t.data ? 'audit'$$)")
    conn.execute("SELECT mbus.create_queue('golden_secure', 1, true)")
    # two consumers taking every message: the plain post's multi-row form
    conn.execute("SELECT mbus.create_queue('golden_fanout', 1)")
    conn.execute("SELECT mbus.create_consumer('golden_fanout', 'second')")
    db = conn.execute("SELECT current_database()").fetchone()
    assert db is not None
    rows = conn.execute(
        "SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc AS p "
        # golden_audit is only the trigger's target: its functions have golden's shape.
        "WHERE p.pronamespace = 'mbus'::regnamespace "
        "AND (p.proname ~ '_golden(_secure)?($|_by_)' OR p.proname = 'post_golden_fanout') "
        "ORDER BY p.proname"
    ).fetchall()
    # Role names carry the database's name; the test database's is random.
    return {str(name): str(body).replace(str(db[0]), "<db>") for name, body in rows}


def test_generated_functions_match_the_golden_files(db_dsn: str) -> None:
    # A database of its own: consumer ids (cids) are in the generated code, and the shared
    # database's identity has moved on after other tests' rolled-back consumers.
    with psycopg.connect(db_dsn) as conn:
        generated = _generated(conn)
        conn.rollback()
    assert {"post_golden", "consume_golden_by_vip", "lease_golden_secure_by_default"} <= set(
        generated
    )
    if os.environ.get("PGMBUS_UPDATE_GOLDEN") == "1":
        for old in GOLDEN.glob("*.sql"):
            old.unlink()
        for name, body in generated.items():
            (GOLDEN / f"{name}.sql").write_text(body.rstrip() + "\n", "utf-8")
    on_disk = {p.stem: p.read_text("utf-8") for p in sorted(GOLDEN.glob("*.sql"))}
    assert sorted(on_disk) == sorted(generated), "run with PGMBUS_UPDATE_GOLDEN=1 and review"
    changed = [n for n, body in generated.items() if on_disk[n] != body.rstrip() + "\n"]
    assert not changed, f"generated code changed: {changed}; PGMBUS_UPDATE_GOLDEN=1 rewrites"
