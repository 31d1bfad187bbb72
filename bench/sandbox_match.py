"""Matching cost of a group's subscriptions: the owner's conditions vs the sandbox's (pgbench).

Two groups hold the same ``n`` subscriptions of one condition (params ``{"topic": "fan.<i>"}``):
in ``full`` they are the owner's (``full_language``: ``mbus._match_query`` with the reader's
role, the GIN index on params), in ``sandbox`` they are not (``mbus._match_sandboxed``, the
role ``mbus_condition``, arrays). One transaction matches 1,000 events (topics ``fan.0`` ..
``fan.99``) with ``mbus._match``; the sides alternate within each round, so both see the same
load. Run against a database with pgmbus installed; it makes and drops its own groups::

    python -m bench.sandbox_match "host=... dbname=..." --sizes 10 100 1000 10000
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile

import psycopg

CONDITIONS = {
    "contains": "s.params @> jsonb_build_object('topic', e.topic)",
    "equals": "s.params->>'topic' = e.topic AND e.payload->>'i' IS NOT NULL",
}
SCRIPT = "SELECT count(*) FROM mbus._match(:grp, (SELECT events FROM bench_match_events));\n"
# the events built in the transaction, as mbus.read_subscriptions does (a stored array is
# compressed: every use of it decompresses it)
SCRIPT_BUILT = (
    "SELECT count(*) FROM mbus._match(:grp, (SELECT array_agg(ROW(NULL, i, 'fan.' || (i % 100),"
    " NULL, jsonb_build_object('i', i), '{}', now())::mbus.stream_row ORDER BY i)"
    " FROM generate_series(1, 1000) AS i));\n"
)


def _prepare(conn: psycopg.Connection[tuple[object, ...]], condition: str, n: int) -> None:
    conn.execute("DELETE FROM mbus.stream_groups WHERE name IN ('full', 'sandbox')")
    conn.execute("DROP TABLE IF EXISTS bench_match_events")
    conn.execute(
        "CREATE TABLE bench_match_events AS SELECT array_agg(ROW(NULL, i, 'fan.' || (i % 100),"
        " NULL, jsonb_build_object('i', i), '{}', now())::mbus.stream_row ORDER BY i) AS events"
        " FROM generate_series(1, 1000) AS i"
    )
    for group, full in (("full", True), ("sandbox", False)):
        conn.execute("SELECT mbus.create_group(%s)", (group,))
        conn.execute(
            "INSERT INTO mbus.subscriptions (group_name, condition, params, full_language)"
            " SELECT %s, %s, jsonb_build_object('topic', 'fan.' || i), %s"
            " FROM generate_series(0, %s - 1) AS i",
            (group, condition, full, n),
        )
    conn.execute("ANALYZE mbus.subscriptions")
    conn.execute("ANALYZE bench_match_events")


def _tps(dsn: str, group: str, seconds: int, script: str = SCRIPT) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(
            [
                "pgbench",
                "-n",
                "-M",
                "extended",
                "-c",
                "1",
                "-T",
                str(seconds),
                "-D",
                f"grp={group}",
                "-f",
                f.name,
                dsn,
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        os.unlink(f.name)
    found = re.search(r"tps = ([0-9.]+)", out)
    assert found, out
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dsn")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000])
    parser.add_argument("--conditions", nargs="+", default=list(CONDITIONS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument(
        "--built", action="store_true", help="build the events in each transaction (not stored)"
    )
    parser.add_argument(
        "--before", help="a second database with other code installed: its sandbox side too"
    )
    parser.add_argument(
        "--before-max", type=int, default=1000, help="sizes above this skip --before (slow)"
    )
    args = parser.parse_args()
    for kind in args.conditions:
        for n in args.sizes:
            before = args.before if args.before and n <= args.before_max else None
            for dsn in filter(None, (args.dsn, before)):
                with psycopg.connect(dsn, autocommit=True) as conn:
                    _prepare(conn, CONDITIONS[kind], n)
            rows = []
            script = SCRIPT_BUILT if args.built else SCRIPT
            for _ in range(args.rounds):
                full = _tps(args.dsn, "full", args.seconds, script)
                sandbox = _tps(args.dsn, "sandbox", args.seconds, script)
                old = _tps(before, "sandbox", args.seconds, script) if before else float("nan")
                rows.append((full, sandbox, old))
            load = os.getloadavg()[0]
            tps = "; ".join(f"{f:.2f} / {s:.2f} / {o:.2f}" for f, s, o in rows)
            ratios = ", ".join(f"{s / f:.2f} (before {o / f:.3f})" for f, s, o in rows)
            print(
                f"{kind} n={n}: tps full / sandbox / before's sandbox {tps};"
                f" sandbox / full {ratios}; load {load:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
