"""Careless and hostile arguments to the documented SQL API get typed errors, never a raw
constraint, cast or overflow error, and never a hang.

The sweep calls every function the docs name (``mbus.<name>(``), and the generated functions of
one queue, with NULLs and values at and past every bound, each call rolled back. An error is
typed when pgmbus.errors maps its SQLSTATE to a class of its own (the ``MB`` class, and the
standard codes that mean the same). The cases after it pin the defects the sweep found.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgmbus.errors import DatabaseError, error_class_for
from pgmbus.testing.server import TestServer

DOCS = Path(__file__).resolve().parents[1] / "docs"
QUEUE = "fz"
# Each value an SQL expression of the type; NULL always comes first (the all-NULL call).
POOLS: dict[str, list[str]] = {
    "text": [
        "NULL",
        "''",
        f"'{QUEUE}'",
        "'default'",
        "'nosuch'",
        "'t.a'",
        "repeat('x', 5000)",
        "'a/b'",
        "'Ab'",
        "'* * * * *'",
        "'http://127.0.0.1:9/x'",
        "E'\\n'",
        f"'{QUEUE}.1@db'",
        "'0:0:'",
        "'a = 1'",
    ],
    "integer": ["NULL", "-1", "0", "1", "2", "2147483647", "-2147483648"],
    "bigint": ["NULL", "-1", "0", "1", "9223372036854775807", "-9223372036854775808"],
    "double precision": ["NULL", "-1", "0", "1e308", "'NaN'", "'Infinity'"],
    "boolean": ["NULL", "true", "false"],
    "jsonb": [
        "NULL",
        "'{}'",
        "'[]'",
        "'\"s\"'",
        "'null'",
        "'1'",
        "'{\"a\": 1}'",
        "(repeat('[', 150) || repeat(']', 150))::jsonb",
        "'{\"delay_s\": 1e308}'",
    ],
    "interval": ["NULL", "'-1 day'", "'0'", "'1 second'", "'1000000 years'", "'1 ms'"],
    "timestamp with time zone": [
        "NULL",
        "'infinity'",
        "'-infinity'",
        "now()",
        "'294276-01-01'",
        "now() + interval '1 hour'",
    ],
    "uuid": ["NULL", "gen_random_uuid()"],
    "text[]": ["NULL", "'{}'", "'{NULL}'", f"'{{{QUEUE}}}'", "ARRAY[repeat('x', 5000)]"],
    "integer[]": ["NULL", "'{}'", "'{NULL}'", "'{-1}'", "'{40000}'"],
    "bigint[]": ["NULL", "'{}'", "'{NULL}'", "'{-1}'"],
    "jsonb[]": [
        "NULL",
        "'{}'",
        "ARRAY[NULL::jsonb]",
        "ARRAY['[]'::jsonb]",
        "ARRAY['{\"a\": 1}'::jsonb, '{}'::jsonb]",
    ],
    "timestamp with time zone[]": [
        "NULL",
        "'{}'",
        "ARRAY[NULL::timestamptz]",
        "ARRAY['infinity'::timestamptz]",
    ],
    "regclass": ["NULL", "'mbus.events'::regclass", "'pg_class'::regclass"],
    # post's consume_after: an iid, an array of them, or anything else (no cast added)
    "anycompatible": ["NULL::text", "'fz.1@db'", "ARRAY['fz.1@db', NULL]", "42", "'{}'::jsonb"],
}
# Documented preconditions of hot, inlined helpers, where a check would cost every row:
# key_slot(key, id, nslots) divides by nslots (>= 1), 22012 "division by zero".
EXEMPT = {"key_slot"}
SWEEP_CALLS = 12  # random calls per function, beside the all-NULL one (make chaos: more)


def documented_functions() -> set[str]:
    names: set[str] = set()
    for page in [*DOCS.glob("*.md"), DOCS.parent / "README.md"]:
        names.update(re.findall(r"mbus\.([a-z][a-z0-9_]*)\(", page.read_text()))
    return names


def cast(value: str, type_name: str) -> str:
    return value if type_name == "anycompatible" else f"({value})::{type_name}"


def typed(sqlstate: str | None) -> bool:
    # 57014 is the sweep's statement timeout: a call that does not end is a defect too
    return error_class_for(sqlstate) is not DatabaseError


def sweep(dsn: str, calls_per_function: int, seed: int) -> tuple[list[str], set[str]]:
    """The calls whose error was not typed, and the functions called."""
    rng = random.Random(seed)
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("SELECT mbus.create_queue(%s, 2)", (QUEUE,))
        admin.execute("SELECT * FROM mbus.timer_add_client('fz')")
        functions = admin.execute(
            """SELECT p.proname, p.oid::regproc::text,
                      array(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) AS t),
                      p.pronargdefaults, p.proretset
               FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
               WHERE n.nspname = 'mbus' AND p.prokind = 'f'
                 AND p.prorettype NOT IN ('trigger'::regtype, 'event_trigger'::regtype)
               ORDER BY p.oid"""
        ).fetchall()
    wanted = documented_functions() - EXEMPT
    generated = re.compile(rf"^[a-z_]+_{QUEUE}(_by_[a-z]+)?$")
    problems: list[str] = []
    covered: set[str] = set()
    with psycopg.connect(dsn) as conn:
        conn.execute("SET statement_timeout = '12s'")
        conn.commit()
        for name, qualified, types, ndefaults, retset in functions:
            if not (name in wanted or generated.match(name)) or any(t not in POOLS for t in types):
                continue
            covered.add(name)
            for k in range(calls_per_function + 1):
                args = ["NULL"] * len(types) if k == 0 else [rng.choice(POOLS[t]) for t in types]
                if k and ndefaults and name != "consume_wait" and rng.random() < 0.3:
                    args = args[: len(types) - rng.randint(0, ndefaults)]  # defaults left out
                given = zip(args, types[: len(args)], strict=True)
                listed = ", ".join(cast(a, t) for a, t in given)
                call = f"{qualified}({listed})"
                query = f"SELECT * FROM {call}" if retset else f"SELECT {call}"
                try:
                    conn.execute(query).fetchall()
                except psycopg.Error as exc:
                    if not typed(exc.sqlstate):
                        problems.append(f"{query}\n  -> {exc.sqlstate} {exc.diag.message_primary}")
                finally:
                    conn.rollback()
    return problems, covered


def test_documented_functions_give_only_typed_errors(db_dsn: str) -> None:
    problems, covered = sweep(db_dsn, SWEEP_CALLS, seed=14)
    assert not problems, "\n".join(problems[:20])
    # the sweep reaches the engines' entry points (a renamed doc must not empty it)
    assert len(covered) >= 80, sorted(covered)
    assert {
        "post",
        "consume_wait",
        "publish",
        "timer_create",
        "spark_claim_batch",
        f"post_{QUEUE}",
        f"consume_{QUEUE}_by_default",
    } <= covered


@pytest.mark.chaos
def test_documented_functions_give_only_typed_errors_long(db_dsn: str) -> None:
    seed = random.randrange(1 << 30)
    problems, _ = sweep(db_dsn, 150, seed=seed)
    assert not problems, f"seed {seed}:\n" + "\n".join(problems[:20])


# -- the defects the sweep found, one by one ---------------------------------------------------
CASES: list[tuple[str, tuple[Any, ...], str, str]] = [
    # a NULL timeout never ended the wait; a zero poll spun; a huge timeout overflowed (22008)
    ("SELECT * FROM mbus.consume_wait(%s, 'default', NULL)", (QUEUE,), "MB006", "timeout NULL"),
    (
        "SELECT * FROM mbus.consume_wait(%s, 'default', '1000000 years')",
        (QUEUE,),
        "MB006",
        "timeout",
    ),
    (
        "SELECT * FROM mbus.consume_wait(%s, 'default', '1 s', '0')",
        (QUEUE,),
        "MB006",
        "poll 00:00:00",
    ),
    (
        f"SELECT mbus.deps_{QUEUE}('nosuch', NULL, NULL)",
        (),
        "MB006",
        "unknown consume_after action",
    ),  # was 20000 'case not found'
    ("SELECT mbus.exchange_forget('1000000 years')", (), "MB006", "older_than"),  # 22008
    ("SELECT mbus.exchange_receive(NULL, '[]')", (), "MB001", ""),  # 22004
    ("SELECT mbus.await_done(NULL)", (), "MB001", ""),  # 22004
    ('SELECT mbus.saga_start(NULL, \'[{"queue": "a"}]\')', (), "MB006", "a saga needs a name"),
    ("SELECT mbus.stop_capture(NULL)", (), "MB002", "table NULL is not captured"),  # 42601
    ("SELECT mbus.create_view(%s, 'nosuch.v')", (QUEUE,), "MB002", "schema nosuch"),  # 3F000
    ("SELECT mbus.spark_claim_batch(NULL, 'q', 1)", (), "MB006", "sink and query_id"),  # 23502
    ("SELECT mbus.spark_claim_batch('s', 'q', -1)", (), "MB006", "batch_id"),  # 23514
    (
        "SELECT mbus.spark_commit_write('s', 'q', 0, NULL, NULL, NULL, 'topic')",
        (),
        "MB006",
        "write_id, tokens and expected",
    ),
    ("SELECT mbus.spark_mark_pending('w', 't', -1)", (), "MB006", "rows 0 or more"),  # 23514
    ("SELECT mbus.spark_clean_staged(NULL, '1000000 years')", (), "MB006", "ttl"),  # 22008
    # an infinite clock stored a lease end no client could read: the lease never ended
    (
        f"SELECT * FROM mbus.lease_{QUEUE}_by_default(1, '1 min', NULL, 'infinity')",
        (),
        "MB006",
        "p_now must be a time from 1900 to 9998",
    ),
    (
        f"SELECT * FROM mbus.lease_{QUEUE}_by_default(1, '1 min', NULL, '294276-01-01')",
        (),
        "MB006",
        "p_now must be a time",
    ),  # a lease end no client reads back either
    ("SELECT * FROM mbus.queue_stats(%s, 'infinity')", (QUEUE,), "MB006", "p_now"),  # 22008
    (
        "SELECT * FROM mbus.timer_create(1, 'g', 'e', now(), 'http://127.0.0.1:9/',"
        " p_now => '-infinity')",
        (),
        "MB006",
        "p_now must be a time",
    ),
]


@pytest.fixture(scope="module")
def cases_dsn(pg_server: TestServer) -> Iterator[str]:
    """One database for the cases below: each refused call changes nothing, so they share it."""
    name = pg_server.create_database()
    dsn = pg_server.dsn(name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_queue(%s, 1)", (QUEUE,))
    yield dsn
    pg_server.drop_database(name)


@pytest.mark.parametrize(
    ("query", "args", "sqlstate", "message"), CASES, ids=[c[0][:60] for c in CASES]
)
def test_a_bad_argument_is_a_typed_error_that_changes_nothing(
    cases_dsn: str, query: str, args: tuple[Any, ...], sqlstate: str, message: str
) -> None:
    with psycopg.connect(cases_dsn, autocommit=True) as conn:
        conn.execute("SET statement_timeout = '5s'")
        counts = (
            "SELECT (SELECT count(*) FROM mbus.saga), (SELECT count(*) FROM mbus.spark_batches)"
        )
        before = conn.execute(counts).fetchone()
        with pytest.raises(psycopg.Error) as info:
            conn.execute(query, args)
        assert (info.value.sqlstate, message in str(info.value)) == (sqlstate, True), info.value
        assert conn.execute(counts).fetchone() == before


def test_stop_capture_of_nothing_with_missing_ok_is_a_no_op(db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.stop_capture(NULL, true)")
        assert conn.execute("SELECT count(*) FROM mbus.captures").fetchone() == (0,)


def test_read_retries_checks_its_count_and_lease(db_dsn: str) -> None:
    """A negative count failed the LIMIT (2201W); a NULL lease set next_at to NULL, and the
    claimed retries were never due again."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_group('g')")
        for args, message in (
            ((-1, "1 min"), "max_events"),
            ((10, None), "lease must be"),
            ((10, "-1 s"), "lease must be"),
        ):
            with pytest.raises(psycopg.Error, match=message) as info:
                conn.execute("SELECT * FROM mbus.read_retries('g', %s, %s::interval)", args)
            assert info.value.sqlstate == "MB006"
