"""The roles security model, views, and catalog checks of the mbus schema.

Tests use real LOGIN roles (the test cluster trusts local connections). Every test's docstring
quotes the design document's statement it checks, translated into English.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[dict[str, Any]]

# Functions PUBLIC may execute on purpose: dispatchers whose target (a generated function) has
# its own EXECUTE privilege, and the helpers they call. USAGE on schema mbus is not PUBLIC's.
PUBLIC_OK = {
    "check_name",
    "generated_name",
    "require_queue",
    "require_consumer",
    "post",
    "post_batch",
    "consume",
    "consumen",
    "consume_lease",
    "ack",
    "nack",
    "extend",
    "bury",
    "consume_wait",
    "clear_queue",  # dispatches to clear_queue_<q>, which stays the owner's
    "take_from",
    "upkeep_queue",
    "peek",
    "get_iid",
    "rotate_queue",  # storage upkeep: truncates only segments without rows (0006)
}


def scalar(conn: Conn, query: str, *args: Any) -> Any:
    row = conn.execute(query, args).fetchone()
    assert row is not None
    return next(iter(row.values()))


@pytest.fixture
def admin(db_dsn: str) -> Iterator[Conn]:
    with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as c:
        yield c


@pytest.fixture
def login(admin: Conn, db_dsn: str) -> Iterator[Callable[..., Conn]]:
    """Make LOGIN roles (granted the given roles) and connect as them; dropped afterwards."""
    made: list[str] = []
    conns: list[Conn] = []

    def factory(*granted: str) -> Conn:
        name = f"u_{uuid.uuid4().hex[:10]}"
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
        made.append(name)
        for g in granted:
            admin.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(g), sql.Identifier(name)))
        params = conninfo_to_dict(db_dsn) | {"user": name}
        c = psycopg.connect(make_conninfo("", **params), autocommit=True, row_factory=dict_row)
        conns.append(c)
        return c

    yield factory
    for c in conns:
        c.close()
    for name in made:
        admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def role(admin: Conn, kind: str, queue: str, consumer: str | None = None) -> str:
    return str(scalar(admin, "SELECT mbus.queue_role(%s, %s, %s)", kind, queue, consumer))


def role_exists(admin: Conn, name: str) -> bool:
    return bool(scalar(admin, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s)", name))


def depth(admin: Conn, queue: str) -> int:
    return int(scalar(admin, f"SELECT count(*) FROM mbus.q_{queue}"))


def test_roles_are_created_and_dropped_with_queues_and_consumers(admin: Conn) -> None:
    """ "When a queue is created (any: with the old way of access control or the new one) the
    roles for posting and for receiving are created automatically (creating a queue creates the
    consumer default - hence the receiving role). Creating any consumer creates its role; the role
    is dropped when the consumer is dropped. Dropping a queue drops the roles for posting and
    receiving (for all consumers)"."""
    db = scalar(admin, "SELECT current_database()")
    admin.execute("SELECT mbus.create_queue('plain', 1)")
    admin.execute("SELECT mbus.create_queue('sec', 1, true)")
    for q in ("plain", "sec"):
        assert role(admin, "post", q) == f"mbus_{db}_post_{q}"
        assert role_exists(admin, f"mbus_{db}_post_{q}")
        assert role_exists(admin, f"mbus_{db}_consume_{q}_by_default")
    admin.execute("SELECT mbus.create_consumer('sec', 'audit')")
    assert role_exists(admin, f"mbus_{db}_consume_sec_by_audit")
    admin.execute("SELECT mbus.drop_consumer('sec', 'audit')")
    assert not role_exists(admin, f"mbus_{db}_consume_sec_by_audit")
    admin.execute("SELECT mbus.create_consumer('sec', 'audit2')")
    admin.execute("SELECT mbus.drop_queue('sec')")
    for r in ("post_sec", "consume_sec_by_default", "consume_sec_by_audit2"):
        assert not role_exists(admin, f"mbus_{db}_{r}")


def test_post_needs_the_post_role(admin: Conn, login: Callable[..., Conn]) -> None:
    """ "If is_roles_security_model is set, only users having the role mbus_<dbname>_post_<qname>
    may post to the queue ... the post functions are created with the security definer option,
    and when posting the role of the posting user is checked"."""
    admin.execute("SELECT mbus.create_queue('sec', 1, true)")
    poster = login(role(admin, "post", "sec"))
    stranger = login()
    poster.execute("SELECT mbus.post('sec', %s)", (Jsonb({"n": 1}),))
    iid = scalar(poster, "SELECT mbus.post_sec(%s)", Jsonb({"n": 2}))
    assert iid.startswith("sec.")
    assert depth(admin, "sec") == 2
    for query in ("SELECT mbus.post('sec', %s)", "SELECT mbus.post_sec(%s)"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            stranger.execute(query, (Jsonb({"n": 3}),))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        poster.execute("SELECT * FROM mbus.consume('sec')")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        poster.execute("SELECT count(*) FROM mbus.q_sec")
    assert depth(admin, "sec") == 2
    row = admin.execute(
        "SELECT prosecdef, proconfig FROM pg_proc WHERE proname = 'post_sec'"
    ).fetchone()
    assert row is not None
    prosecdef, config = row.values()
    assert prosecdef and config == ["search_path=pg_catalog, pg_temp"]


def test_consume_needs_the_consumer_role(admin: Conn, login: Callable[..., Conn]) -> None:
    """ "To receive a message the consumer must have a role of the form
    mbus_<dbname>_consume_<queue_name>_by_<consumer_name>"."""
    admin.execute("SELECT mbus.create_queue('sec', 1, true)")
    admin.execute("SELECT mbus.create_consumer('sec', 'audit')")
    for n in range(3):
        admin.execute("SELECT mbus.post('sec', %s)", (Jsonb({"n": n}),))
    by_default = login(role(admin, "consume", "sec", "default"))
    stranger = login(role(admin, "post", "sec"))
    got = by_default.execute("SELECT data FROM mbus.consume('sec')").fetchall()
    assert got == [{"data": {"n": 0}}]
    got = by_default.execute("SELECT data FROM mbus.consume_sec_by_default()").fetchall()
    assert got == [{"data": {"n": 1}}]
    for query in (
        "SELECT * FROM mbus.consume('sec', 'audit')",
        "SELECT * FROM mbus.consumen_sec_by_audit(10)",
        "SELECT * FROM mbus.consume('sec')",
    ):
        conn = stranger if query.endswith("('sec')") else by_default
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(query)
    assert int(scalar(admin, "SELECT count(*) FROM mbus.q_sec WHERE c = 2")) == 3  # audit's
    assert int(scalar(admin, "SELECT count(*) FROM mbus.q_sec WHERE c = 1")) == 1


def test_consume_after_across_roles_queues_needs_no_right_on_the_dependency(
    admin: Conn, login: Callable[..., Conn]
) -> None:
    """consume_after under the roles model: the poster names a message of a queue it has no
    role for (post_<q> runs as the owner), the consume of that message by its own consumer
    role releases the wait (release_deps runs as the owner), and the generated deps_<q> doing
    the work on either queue is executable by none of their roles."""
    admin.execute("SELECT mbus.create_queue('sec', 1, true)")
    admin.execute("SELECT mbus.create_queue('sec_first', 1, true)")
    first = scalar(admin, "SELECT mbus.post_sec_first(%s)", Jsonb({"n": 0}))
    poster = login(role(admin, "post", "sec"), role(admin, "consume", "sec", "default"))
    first_consumer = login(role(admin, "consume", "sec_first", "default"))
    poster.execute("SELECT mbus.post_sec(%s, consume_after => %s::text)", (Jsonb({"n": 1}), first))
    assert poster.execute("SELECT * FROM mbus.consume_sec_by_default()").fetchall() == []
    for conn in (poster, first_consumer):
        for fn in ("deps_sec", "deps_sec_first"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"SELECT mbus.{fn}('free', NULL, 1)")
    got = first_consumer.execute("SELECT data FROM mbus.consume_sec_first_by_default()").fetchall()
    assert got == [{"data": {"n": 0}}]
    got = poster.execute("SELECT data FROM mbus.consume_sec_by_default()").fetchall()
    assert got == [{"data": {"n": 1}}]


def test_view_insert_posts_with_grants_on_the_view_only(
    admin: Conn, login: Callable[..., Conn]
) -> None:
    """ "The function mbus.create_view ... creates a view named viewname (if not given, then
    public.queuename_q) and an insert trigger on it; rights on this view can then be given to
    ordinary users"."""
    admin.execute("SELECT mbus.create_queue('jobs', 1)")
    assert scalar(admin, "SELECT mbus.create_view('jobs')") == "public.jobs_q"
    admin.execute("CREATE SCHEMA app")
    assert scalar(admin, "SELECT mbus.create_view('jobs', 'app.job_requests')") == (
        "app.job_requests"
    )
    user = login()
    admin.execute(
        sql.SQL("GRANT INSERT, SELECT ON public.jobs_q TO {}").format(
            sql.Identifier(str(scalar(user, "SELECT current_user")))
        )
    )
    iid = scalar(
        user, "INSERT INTO public.jobs_q (data) VALUES (%s) RETURNING iid", Jsonb({"n": 1})
    )
    assert iid.startswith("jobs.")
    assert user.execute("SELECT data FROM public.jobs_q").fetchall() == [{"data": {"n": 1}}]
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        user.execute("INSERT INTO app.job_requests (data) VALUES (%s)", (Jsonb({"n": 2}),))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        user.execute("SELECT mbus.post_jobs(%s)", (Jsonb({"n": 3}),))
    assert depth(admin, "jobs") == 1
    got = admin.execute("SELECT data FROM mbus.consume('jobs')").fetchall()
    assert got == [{"data": {"n": 1}}]
    admin.execute("SELECT mbus.drop_queue('jobs')")
    assert scalar(admin, "SELECT to_regclass('public.jobs_q') IS NULL")
    assert scalar(admin, "SELECT to_regclass('app.job_requests') IS NULL")


def _make_queues(admin: Conn) -> None:
    admin.execute("SELECT mbus.create_queue('plain', 1)")
    admin.execute("SELECT mbus.create_queue('sec', 1, true)")
    admin.execute("SELECT mbus.create_consumer('sec', 'audit')")
    admin.execute("SELECT mbus.create_view('plain')")


def test_no_function_executable_by_public_unless_meant(admin: Conn) -> None:
    """Catalog: no mbus function (generated ones included) is executable by PUBLIC except the
    documented dispatchers."""
    _make_queues(admin)
    rows = admin.execute(
        """SELECT p.proname FROM pg_proc AS p
           WHERE p.pronamespace = 'mbus'::regnamespace
             AND (p.proacl IS NULL OR EXISTS (
                 SELECT 1 FROM aclexplode(p.proacl) AS a
                 WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'))"""
    ).fetchall()
    assert {r["proname"] for r in rows} == PUBLIC_OK
    assert not scalar(admin, "SELECT has_schema_privilege('public', 'mbus', 'USAGE')")


def test_every_security_definer_function_pins_search_path(admin: Conn) -> None:
    """Catalog: every SECURITY DEFINER function of mbus sets search_path (pg_temp last)."""
    _make_queues(admin)
    rows = admin.execute(
        """SELECT p.proname, p.proconfig FROM pg_proc AS p
           WHERE p.pronamespace = 'mbus'::regnamespace AND p.prosecdef"""
    ).fetchall()
    assert {"post_sec", "consume_sec_by_audit", "clear_tempq", "view_insert"} <= {
        r["proname"] for r in rows
    }
    for r in rows:
        paths = [c for c in r["proconfig"] or [] if c.startswith("search_path=")]
        assert paths and paths[0].endswith("pg_temp"), r


HOSTILE = """
CREATE SCHEMA hostile;
CREATE TABLE hostile.calls (what text);
GRANT USAGE ON SCHEMA hostile TO PUBLIC;
GRANT INSERT ON hostile.calls TO PUBLIC;
CREATE FUNCTION hostile.current_database() RETURNS name LANGUAGE sql
    AS $$ INSERT INTO hostile.calls VALUES ('current_database') RETURNING 'evil'::name $$;
CREATE FUNCTION hostile.now() RETURNS timestamptz LANGUAGE sql
    AS $$ INSERT INTO hostile.calls VALUES ('now') RETURNING '2000-01-01'::timestamptz $$;
CREATE FUNCTION hostile.clock_timestamp() RETURNS timestamptz LANGUAGE sql
    AS $$ INSERT INTO hostile.calls VALUES ('clock') RETURNING '2000-01-01'::timestamptz $$;
CREATE FUNCTION hostile.nextval(regclass) RETURNS bigint LANGUAGE sql
    AS $$ INSERT INTO hostile.calls VALUES ('nextval') RETURNING 1::bigint $$;
CREATE TABLE hostile.queue (qname text);
CREATE TABLE hostile.dmq (iid text);
"""


def test_hostile_objects_in_the_search_path_change_nothing(
    admin: Conn, login: Callable[..., Conn]
) -> None:
    """Catalog: a hostile schema before the mbus functions' own lookups changes nothing: SECURITY
    DEFINER functions pin their search_path (even a caller with 'hostile, pg_catalog' first), and
    the others qualify every name and run behind pg_catalog (searched first unless the caller
    lists it explicitly later - the documented condition)."""
    _make_queues(admin)
    admin.execute(HOSTILE)
    db = scalar(admin, "SELECT current_database()")
    poster = login(role(admin, "post", "sec"), role(admin, "consume", "sec", "default"))
    poster.execute("SET search_path = hostile, pg_catalog, public")
    poster.execute("SELECT mbus.post_sec(%s)", (Jsonb({"n": 1}),))
    poster.execute("SELECT mbus.post('sec', %s, %s)", (Jsonb({"n": 2}), Jsonb({"k": 1})))
    got = poster.execute("SELECT data, headers FROM mbus.consumen_sec_by_default(5)").fetchall()
    assert [g["data"] for g in got] == [{"n": 1}, {"n": 2}]
    assert all(g["headers"]["source_db"] == db for g in got)
    admin.execute("SET search_path = hostile, public")
    admin.execute("SELECT mbus.post_plain(%s, %s)", (Jsonb({"n": 3}), Jsonb({"k": 1})))
    admin.execute("SELECT mbus.post('plain', %s)", (Jsonb({"n": 4}),))
    got = admin.execute("SELECT data, headers FROM mbus.consumen('plain', 'default', 5)").fetchall()
    assert [g["data"] for g in got] == [{"n": 3}, {"n": 4}]
    assert all(g["headers"]["source_db"] == db for g in got)
    # consume_after: the dependency's statements (deps_<q>) and the release at commit
    first = scalar(admin, "SELECT mbus.post_plain(%s)", Jsonb({"n": 5}))
    admin.execute("SELECT mbus.post_plain(%s, consume_after => %s::text)", (Jsonb({"n": 6}), first))
    for n in (5, 6):
        got = admin.execute("SELECT data FROM mbus.consumen('plain', 'default', 5)").fetchall()
        assert [g["data"] for g in got] == [{"n": n}]
    assert scalar(admin, "SELECT count(*) FROM hostile.calls") == 0
