"""Property-based tests of the queue API over names, selectors, iids and payloads.

For any input, a call either fails with a typed error (SQLSTATE class MB) and leaves the catalog
and the data as they were, or succeeds with the invariants intact: generated names one-to-one,
every message delivered once per matching consumer or in the dead-message queue, an iid pending
at most once. Each example runs in a transaction of the shared database that is rolled back.
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[dict[str, Any]]

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Names: mostly valid, often colliding with each other or with the mbus schema's own names.
NAMES = st.one_of(
    st.sampled_from(
        ["a", "a_by_b", "b_by_c", "c", "b", "dmq", "jobs", "jobs_claim", "default", "tq_1", "by"]
    ),
    st.text(alphabet=string.ascii_lowercase + string.digits + "_", min_size=1, max_size=30),
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12),
)
# (NUL cannot be sent in a text parameter at all: psycopg refuses it before the server sees it.)

# Selectors: atoms that hold, fail to hold, raise on some messages, or are not static.
ATOMS = [
    "t.data ? 'x'",
    "(t.properties->>'k') = 'v'",
    "(t.properties->>'k')::int > 5",
    "1 / (t.properties->>'n')::int = 1",
    "(t.data->>'x')::numeric < 0.5",
    "true",
    "NULL",
    "now() > t.added",
    "(SELECT true)",
    "t.nope = 1",
    "'abc'",
    "random() < 2",
    "length(t.iid) > 0",
]
SELECTORS = st.one_of(
    st.none(),
    st.sampled_from(ATOMS),
    st.tuples(st.sampled_from(ATOMS), st.sampled_from(["AND", "OR"]), st.sampled_from(ATOMS)).map(
        lambda p: f"({p[0]}) {p[1]} ({p[2]})"
    ),
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=20),
)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=5),
            inner,
            max_size=3,
        ),
    ),
    max_leaves=8,
)
PROPERTIES = st.dictionaries(
    st.sampled_from(["k", "n"]),
    st.one_of(st.sampled_from(["v", "0", "1", "9", "x", ""]), st.integers(-2, 9)),
    max_size=2,
)


@contextmanager
def transaction(dsn: str) -> Iterator[Conn]:
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        try:
            yield conn
        finally:
            conn.rollback()


def snapshot(conn: Conn) -> tuple[Any, ...]:
    """The catalog and data a failed call must leave as they were."""
    row = conn.execute(
        """SELECT (SELECT count(*) FROM pg_proc WHERE pronamespace = 'mbus'::regnamespace) AS f,
                  (SELECT count(*) FROM pg_class WHERE relnamespace = 'mbus'::regnamespace) AS r,
                  (SELECT count(*) FROM pg_roles WHERE rolname LIKE 'mbus%%') AS roles,
                  (SELECT array_agg(qname ORDER BY qname) FROM mbus.queue) AS q,
                  (SELECT array_agg(qname || '/' || cname || '/' || coalesce(selector, '')
                                    ORDER BY qname, cname) FROM mbus.consumer) AS c,
                  (SELECT count(*) FROM mbus.dmq) AS dmq,
                  (SELECT count(*) FROM mbus.temp_object) AS temp"""
    ).fetchone()
    assert row is not None
    return tuple(row.values())


def attempt(conn: Conn, query: str, *args: Any) -> psycopg.Error | None:
    """Run query in a savepoint: None on success; on failure the error must be typed and the
    catalog unchanged."""
    before = snapshot(conn)
    conn.execute("SAVEPOINT p")
    try:
        conn.execute(query, args)
    except psycopg.Error as exc:
        conn.execute("ROLLBACK TO SAVEPOINT p")
        assert exc.sqlstate is not None and exc.sqlstate.startswith("MB"), (query, args, exc)
        assert snapshot(conn) == before
        return exc
    conn.execute("RELEASE SAVEPOINT p")
    return None


def assert_names_one_to_one(conn: Conn) -> None:
    shared = conn.execute(
        """SELECT kind, name, array_agg(owner) AS owners
           FROM (SELECT 'queue ' || q.qname AS owner, g.kind, g.name
                 FROM mbus.queue AS q, mbus.generated_names(q.qname) AS g
                 UNION ALL
                 SELECT 'consumer ' || c.qname || '/' || c.cname, g.kind, g.name
                 FROM mbus.consumer AS c, mbus.generated_names(c.qname, c.cname) AS g) AS x
           GROUP BY kind, name HAVING count(*) > 1"""
    ).fetchall()
    assert shared == []
    # every generated function name is one function (no overload beside a static one)
    overloaded = conn.execute(
        """SELECT p.proname FROM pg_proc AS p
           WHERE p.pronamespace = 'mbus'::regnamespace
             AND p.proname IN (SELECT g.name
                               FROM mbus.queue AS q, mbus.generated_names(q.qname) AS g
                               UNION ALL
                               SELECT g.name FROM mbus.consumer AS c,
                                      mbus.generated_names(c.qname, c.cname) AS g)
           GROUP BY p.proname HAVING count(*) > 1"""
    ).fetchall()
    assert overloaded == []


@SETTINGS
@given(ops=st.lists(st.tuples(st.booleans(), NAMES, NAMES), min_size=1, max_size=6))
def test_any_queue_and_consumer_names(shared_dsn: str, ops: list[tuple[bool, str, str]]) -> None:
    """Queues and consumers with any names: a typed error, or names that stay one-to-one and
    queues that deliver to their own consumers only."""
    with transaction(shared_dsn) as conn:
        for is_consumer, qname, cname in ops:
            if is_consumer:
                attempt(conn, "SELECT mbus.create_consumer(%s, %s)", qname, cname)
            else:
                attempt(conn, "SELECT mbus.create_queue(%s, 1)", qname)
        assert_names_one_to_one(conn)
        consumers = conn.execute("SELECT qname, cname FROM mbus.consumer").fetchall()
        for c in consumers:
            conn.execute("SELECT mbus.post(%s, %s)", (c["qname"], Jsonb({"to": c["qname"]})))
        for c in consumers:
            got = conn.execute(
                "SELECT data FROM mbus.consumen(%s, %s, 100)", (c["qname"], c["cname"])
            ).fetchall()
            assert got and all(g["data"] == {"to": c["qname"]} for g in got)


def _holds(conn: Conn, selector: str, props: dict[str, Any], data: dict[str, Any]) -> str:
    """The oracle: what the selector says of the message ('yes', 'no' or 'raises')."""
    conn.execute("SAVEPOINT oracle")
    try:
        query = sql.SQL(
            "SELECT coalesce(({}), false) AS v FROM (SELECT (ROW(1, 'jobs.1@x', now(), NULL,"
            " NULL, NULL, %s, %s, NULL, 0, NULL, NULL)::mbus.qt_model).*) AS t"
        ).format(sql.SQL(selector))  # a selector the bus accepted
        row = conn.execute(query, (Jsonb(props), Jsonb(data))).fetchone()
    except psycopg.Error:
        conn.execute("ROLLBACK TO SAVEPOINT oracle")
        return "raises"
    conn.execute("RELEASE SAVEPOINT oracle")
    assert row is not None
    return "yes" if row["v"] else "no"


@SETTINGS
@given(selector=SELECTORS, props=PROPERTIES, x=st.one_of(st.none(), st.integers(-1, 3)))
def test_any_selector(
    shared_dsn: str, selector: str | None, props: dict[str, Any], x: int | None
) -> None:
    """A consumer with any selector: refused (MB004) and nothing changed, or every post is
    delivered to default, and to the consumer exactly when its selector holds, or its copy is
    in the dmq (with the consumer's error counted) when the selector raises."""
    data: dict[str, Any] = {} if x is None else {"x": x}
    with transaction(shared_dsn) as conn:
        conn.execute("SELECT mbus.create_queue('jobs', 1)")
        exc = attempt(conn, "SELECT mbus.create_consumer('jobs', 'p', %s)", selector)
        if exc is not None:
            assert exc.sqlstate == "MB004"
            return
        iid = conn.execute(
            "SELECT mbus.post_jobs(%s, NULL, %s) AS iid", (Jsonb(data), Jsonb(props))
        ).fetchone()
        batch = conn.execute(
            "SELECT iid FROM mbus.post_batch('jobs', %s, NULL, %s) AS p(iid)",
            ([Jsonb(data), Jsonb(data)], [Jsonb(props), Jsonb(props)]),
        ).fetchall()
        assert iid is not None and len(batch) == 2
        verdict = "yes" if selector is None else _holds(conn, selector, props, data)
        got = conn.execute("SELECT count(*) AS n FROM mbus.consumen('jobs', 'p', 10)").fetchone()
        dead = conn.execute(
            "SELECT count(*) AS n FROM mbus.dmq WHERE qname = 'jobs' AND cname = 'p'"
        ).fetchone()
        default = conn.execute(
            "SELECT count(*) AS n FROM mbus.consumen('jobs', 'default', 10)"
        ).fetchone()
        errors = conn.execute(
            "SELECT selector_errors AS n FROM mbus.queue_stats('jobs') WHERE cname = 'p'"
        ).fetchone()
        assert got and dead and default and errors
        assert default["n"] == 3
        assert (got["n"], dead["n"], errors["n"]) == {
            "yes": (3, 0, 0),
            "no": (0, 0, 0),
            "raises": (0, 3, 3),
        }[verdict]


IIDS = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12),
    st.text(max_size=300, alphabet="ab").filter(lambda s: len(s) > 200),
    st.tuples(
        st.sampled_from(["jobs", "other", "Jobs", "j"]),
        st.sampled_from(["1", "01", "0", "99999999999", "1234567890123456789", "x"]),
        st.sampled_from(["@DB", "@elsewhere", "", "@DB@DB"]),
    ).map(lambda p: f"{p[0]}.{p[1]}{p[2]}"),
)


@SETTINGS
@given(iid=IIDS, twice=st.booleans())
def test_any_iid(shared_dsn: str, iid: str, twice: bool) -> None:
    """Posting with any iid: MB006 and nothing stored, or the iid back and exactly one pending
    message with it however often it is posted; take_from removes what it returns."""
    with transaction(shared_dsn) as conn:
        db = conn.execute("SELECT current_database() AS d").fetchone()
        assert db is not None
        iid = iid.replace("@DB", "@" + db["d"])
        conn.execute("SELECT mbus.create_queue('jobs', 1)")
        conn.execute("SELECT setval('mbus.msg_id_seq', greatest(1000, nextval('mbus.msg_id_seq')))")
        first = attempt(conn, "SELECT mbus.post_jobs('{\"n\": 1}', iid => %s)", iid)
        if first is not None:
            assert first.sqlstate == "MB006"
            assert not conn.execute("SELECT 1 FROM mbus.q_jobs").fetchall()
            return
        if twice:
            again = conn.execute(
                "SELECT mbus.post_jobs('{\"n\": 2}', iid => %s) AS iid", (iid,)
            ).fetchone()
            assert again is not None and again["iid"] == iid
        rows = conn.execute(
            "SELECT * FROM mbus.take_from('jobs', 'default', %s)", (iid,)
        ).fetchall()
        assert [(r["iid"], r["data"]) for r in rows] == [(iid, {"n": 1})]
        assert not conn.execute("SELECT 1 FROM mbus.q_jobs").fetchall()


@SETTINGS
@given(data=JSON, props=st.one_of(st.none(), JSON))
def test_any_payload(shared_dsn: str, data: Any, props: Any) -> None:
    """Any JSON as data and properties: MB005 when not objects (nothing stored), else the
    consumer gets them back unchanged."""
    with transaction(shared_dsn) as conn:
        conn.execute("SELECT mbus.create_queue('jobs', 1)")
        exc = (
            attempt(conn, "SELECT mbus.post_jobs(%s, NULL, %s)", Jsonb(data), Jsonb(props))
            if props is not None
            else attempt(conn, "SELECT mbus.post_jobs(%s)", Jsonb(data))
        )
        if exc is not None:
            assert exc.sqlstate == "MB005"
            assert not isinstance(data, dict) or not isinstance(props, dict | None)
            assert not conn.execute("SELECT 1 FROM mbus.q_jobs").fetchall()
            return
        assert isinstance(data, dict) and isinstance(props, dict | None)
        got = conn.execute("SELECT data, properties FROM mbus.consumen('jobs', 'default', 5)")
        rows = got.fetchall()
        assert len(rows) == 1 and norm(rows[0]["data"]) == norm(data)
        assert norm(rows[0]["properties"]) == norm(props)


# The stamping rule as first written (an SQL expression): the reference the stored headers
# are compared with, whatever mbus.stamp_headers has become.
_STAMPED = """
    SELECT h || jsonb_build_object(
        'seenby', CASE
            WHEN jsonb_typeof(h -> 'seenby') <> 'array' OR h -> 'seenby' IS NULL
                THEN jsonb_build_array(current_database())
            WHEN (h -> 'seenby') ? current_database() THEN h -> 'seenby'
            ELSE (h -> 'seenby') || to_jsonb(current_database()) END,
        'source_db', coalesce(h ->> 'source_db', current_database()),
        'destination', %(queue)s::text,
        'enqueue_time', coalesce(h -> 'enqueue_time', to_jsonb(%(added)s::timestamptz)))
    FROM (SELECT coalesce(%(headers)s::jsonb, '{}'::jsonb) AS h) AS s
"""
# "$db" stands for this database's name (seenby already holding it)
_SEENBY = st.lists(st.sampled_from(["$db", "far", "", "x"]), min_size=1, max_size=3)
_STAMPABLE = st.fixed_dictionaries(
    {},
    optional={
        "seenby": st.one_of(_SEENBY, SCALARS),
        "source_db": SCALARS,
        "enqueue_time": SCALARS,
        "destination": SCALARS,
        "trace": JSON,
    },
)
HEADERS = st.one_of(_STAMPABLE, JSON)


@settings(SETTINGS, max_examples=40)
@given(headers=HEADERS, single=st.booleans())
@example(headers={"seenby": ["far", "$db"], "trace": 1}, single=True)  # seenby has us: kept
@example(headers={"seenby": ["far"], "source_db": "far"}, single=False)  # we are appended
@example(headers={"seenby": "far", "source_db": None, "enqueue_time": None}, single=True)
@example(headers=[{"seenby": []}], single=False)  # not an object: MB005
def test_any_headers(shared_dsn: str, headers: Any, single: bool) -> None:
    """Any JSON as headers, posted alone or in a batch: MB005 when not an object (nothing
    stored), else the consumer gets them stamped (seenby, source_db, destination,
    enqueue_time) exactly as the stamping rule says."""
    with transaction(shared_dsn) as conn:
        conn.execute("SELECT mbus.create_queue('jobs', 1)")
        if isinstance(headers, dict) and isinstance(headers.get("seenby"), list):
            here = conn.info.dbname
            headers["seenby"] = [here if v == "$db" else v for v in headers["seenby"]]
        if single:
            exc = attempt(conn, "SELECT mbus.post_jobs('{}', %s)", Jsonb(headers))
        else:
            exc = attempt(
                conn,
                "SELECT mbus.postn_jobs(ARRAY['{}'::jsonb, '{}'::jsonb], ARRAY[%s::jsonb, NULL])",
                Jsonb(headers),
            )
        if exc is not None:
            assert exc.sqlstate == "MB005" and "headers" in str(exc)
            assert not isinstance(headers, dict)
            assert not conn.execute("SELECT 1 FROM mbus.q_jobs").fetchall()
            return
        assert isinstance(headers, dict)
        got = conn.execute("SELECT headers, added FROM mbus.consumen('jobs', 'default', 5)")
        first = got.fetchall()[0]
        row = conn.execute(
            _STAMPED, {"queue": "jobs", "added": first["added"], "headers": Jsonb(headers)}
        ).fetchone()
        assert row is not None
        assert first["headers"] == next(iter(row.values()))


def norm(value: Any) -> Any:
    """JSON as jsonb keeps it: numbers are numeric (3.6e16 comes back as an integer)."""
    if isinstance(value, dict):
        return {k: norm(v) for k, v in value.items()}
    if isinstance(value, list):
        return [norm(v) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value
