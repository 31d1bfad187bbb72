"""Queue selectors are user SQL too: they run inside the generated post functions with the
rights of whoever posts, so a selector may call only built-in functions (pg_catalog: IMMUTABLE
there reads no table) or SECURITY DEFINER ones (their owner's rights, whoever posts). Under real
LOGIN roles: a role that cannot read a table cannot have it read for it by a poster who can."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from pgmbus.errors import InvalidSelector


@pytest.fixture
def spy(db_dsn: str) -> Iterator[str]:
    """A LOGIN role with its own IMMUTABLE (invoker) function that reads a table it may not."""
    role = f"sel_spy_{uuid.uuid4().hex[:8]}"
    ident = sql.Identifier(role)
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(ident))
        conn.execute(sql.SQL("GRANT CREATE, USAGE ON SCHEMA public TO {}").format(ident))
        conn.execute("CREATE TABLE public.sel_secret (v text)")
        conn.execute("INSERT INTO public.sel_secret VALUES ('swordfish')")
        conn.execute("SELECT mbus.create_queue('jobs', 1)")
    spy_dsn = db_dsn.replace("user=postgres", f"user={role}")
    with psycopg.connect(spy_dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION public.sel_peek(d jsonb) RETURNS boolean IMMUTABLE LANGUAGE sql "
            "AS $$ SELECT EXISTS (SELECT 1 FROM public.sel_secret WHERE v = d->>'guess') $$"
        )
        conn.execute(
            "CREATE FUNCTION public.sel_own(d jsonb) RETURNS boolean IMMUTABLE "
            "SECURITY DEFINER SET search_path = pg_catalog LANGUAGE sql "
            "AS $$ SELECT d ? 'guess' $$"
        )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("""SELECT public.sel_peek('{"guess": "swordfish"}')""")
    try:
        yield spy_dsn
    finally:
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            conn.execute("SELECT mbus.drop_queue('jobs')")
            conn.execute("DROP TABLE public.sel_secret")
            conn.execute(sql.SQL("DROP OWNED BY {}").format(ident))
            conn.execute(sql.SQL("DROP ROLE {}").format(ident))


def _consumers(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT cname FROM mbus.consumer ORDER BY 1").fetchall()
    return [r[0] for r in rows]


def test_selector_may_not_call_an_invoker_function_that_posters_would_run(
    db_dsn: str, spy: str
) -> None:
    before = _consumers(db_dsn)
    with (
        psycopg.connect(db_dsn, autocommit=True) as owner,
        pytest.raises(psycopg.Error, match=r"calls public\.sel_peek\(jsonb\)") as refused,
    ):
        owner.execute("SELECT mbus.create_consumer('jobs', 'spy', 'public.sel_peek(t.data)')")
    assert refused.value.sqlstate == InvalidSelector.default_sqlstate
    assert _consumers(db_dsn) == before
    # nothing was pasted into the post function: a poster who can read the table posts a guess
    with psycopg.connect(db_dsn, autocommit=True) as owner:
        owner.execute("""SELECT mbus.post('jobs', '{"guess": "swordfish"}')""")
        got = owner.execute("SELECT count(*) FROM mbus.consumen('jobs', 'default', 10)")
        assert got.fetchone() == (1,)


def test_selector_may_call_builtins_and_security_definer_functions(db_dsn: str, spy: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as owner:
        owner.execute("SELECT mbus.create_consumer('jobs', 'own', 'public.sel_own(t.data)')")
        owner.execute("SELECT mbus.create_consumer('jobs', 'builtin', $$(t.data->>'n')::int > 1$$)")
        owner.execute("""SELECT mbus.post('jobs', '{"guess": 1, "n": 2}')""")
        got = owner.execute(
            "SELECT (SELECT count(*) FROM mbus.consumen('jobs', 'own', 10)), "
            "(SELECT count(*) FROM mbus.consumen('jobs', 'builtin', 10))"
        ).fetchone()
    assert got == (1, 1)


def test_a_role_without_the_owners_rights_cannot_create_a_selector(db_dsn: str, spy: str) -> None:
    ident = sql.Identifier(spy.split("user=")[1].split()[0])
    with psycopg.connect(db_dsn, autocommit=True) as owner:
        owner.execute(sql.SQL("GRANT USAGE ON SCHEMA mbus TO {}").format(ident))
        owner.execute(sql.SQL("GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA mbus TO {}").format(ident))
    before = _consumers(db_dsn)
    with psycopg.connect(spy, autocommit=True) as conn:
        with pytest.raises(psycopg.Error) as refused:
            conn.execute("SELECT mbus.create_consumer('jobs', 'mine', 'public.sel_own(t.data)')")
        assert refused.value.sqlstate == "42501"
        # the check itself needs the owner's rights (it builds an index on mbus.t)
        with pytest.raises(psycopg.Error, match="must be owner of table t") as refused:
            conn.execute("SELECT mbus.check_selector('public.sel_own(t.data)')")
        assert refused.value.sqlstate == InvalidSelector.default_sqlstate
    assert _consumers(db_dsn) == before
