"""Property tests: any condition, params or setting is refused with a typed error and changes
nothing, or is accepted with the bus's invariants intact."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb

from pgmbus import streams
from pgmbus.errors import InvalidArgument, InvalidPayload, InvalidSelector, translating

ATOMS = [
    "e.topic",
    "e.key",
    "e.id",
    "e.payload",
    "e.payload->>'n'",
    "(e.payload->>'n')::int",
    "(e.payload->>'n')::numeric",
    "s.params",
    "s.id",
    "s.params->>'topic'",
    "e.headers",
    "e.published_at",
    "now()",
    "'x'",
    "'t'",
    "1",
    "0",
    "true",
    "false",
    "NULL",
    "current_user",
    "lower(e.topic)",
    "jsonb_build_object('topic', e.topic)",
    "random()",
    "mbus.publish('side.effect', '{}')",
    "nextval('mbus.event_seq')",
    "pg_sleep(0)",
    "(SELECT 1)",
    "EXISTS (SELECT 1 FROM mbus.events)",
    "count(*)",
    "$1",
    "e",
    "s",
    "set_config('a.b', 'c', false)",
    "array_length(ARRAY[1], 1)",
    "1 / 0",
    "1 / e.id",
]
OPS = [
    "=",
    "<>",
    "<",
    ">",
    "AND",
    "OR",
    "NOT",
    "@>",
    "?",
    "||",
    "+",
    "/",
    "IS",
    "IS NOT",
    "LIKE",
    "IN",
    "::boolean",
    "::int",
    "::text",
]
GLUE = [
    "(",
    ")",
    ") OR (",
    ",",
    ";",
    "--",
    "/*",
    "'",
    '"',
    " UNION SELECT ",
    " LIMIT 1",
    " GROUP BY e.id",
    " FROM mbus.events",
]
_printable = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")

BOOLEANS = [
    "e.topic = 'x'",
    "e.key IS NULL",
    "(e.payload->>'n')::int > 5",
    "e.payload ? 'n'",
    "s.params @> jsonb_build_object('topic', e.topic)",
    "e.id > 0",
    "e.published_at <= now()",
    "lower(e.topic) LIKE 'x%'",
    "1 / (e.id % 2) = 1",
    "(e.payload->>'n')::numeric >= 0",
    "e.payload @> s.params",
    "coalesce(e.key, '') = coalesce(s.params->>'k', '')",
]
well_formed = st.recursive(
    st.sampled_from(BOOLEANS),
    lambda inner: (
        st.builds(
            lambda a, op, b: f"({a}) {op} ({b})", inner, st.sampled_from(["AND", "OR"]), inner
        )
        | inner.map(lambda a: f"NOT ({a})")
    ),
    max_leaves=4,
)
hostile = st.builds(
    lambda a, glue, b: f"{a}{glue}{b}",
    st.sampled_from(BOOLEANS + ATOMS),
    st.sampled_from([*GLUE, " OR ", " AND "]),
    st.sampled_from(BOOLEANS + ATOMS),
)
conditions = st.one_of(
    well_formed,
    well_formed,
    hostile,
    st.builds(
        lambda a, op, b: f"{a} {op} {b}",
        st.sampled_from(ATOMS),
        st.sampled_from(OPS),
        st.sampled_from(ATOMS),
    ),
    st.lists(st.sampled_from(ATOMS + OPS + GLUE), min_size=1, max_size=8).map(" ".join),
    st.text(_printable, max_size=40),
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(_printable, max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(_printable, max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
params = st.one_of(
    st.dictionaries(
        st.sampled_from(["topic", "n", "k"]),
        st.sampled_from(["x", "y", "k", 7, 0, None]),
        max_size=2,
    ),
    st.dictionaries(st.sampled_from(["topic", "n", "k"]), json_values, max_size=2),
    json_values,
)
_groups = itertools.count()


@pytest.mark.parametrize("condition", BOOLEANS)
def test_the_well_formed_conditions_are_accepted(
    bus: psycopg.Connection[Any], condition: str
) -> None:
    assert streams.subscribe(bus, "other", f"NOT ({condition}) OR ({condition})") > 0


@pytest.fixture(scope="module")
def bus(shared_stream_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection to the module's database, with sample events of every shape."""
    with psycopg.connect(shared_stream_dsn, autocommit=True) as conn:
        streams.create_group(conn, "other")
        streams.subscribe(conn, "other", "e.topic = 'x'")
        for topic, payload in [
            ("x", {"n": 7}),
            ("x", {"n": "abc"}),
            ("y", {}),
            ("y", {"n": None}),
            ("z", {"n": [1, 2]}),
            ("z", {"n": 0}),
        ]:
            streams.publish(conn, topic, payload, key=None if topic == "y" else "k")
        yield conn


def _state(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    """What a refused call must leave as it was: catalog and data of mbus."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM mbus.subscriptions),"
        " (SELECT md5(string_agg(id::text || condition || params::text, ',' ORDER BY id))"
        "  FROM mbus.subscriptions),"
        " (SELECT count(*) FROM mbus.events), (SELECT max(id) FROM mbus.events),"
        " (SELECT count(*) FROM pg_proc WHERE pronamespace = 'mbus'::regnamespace),"
        " (SELECT count(*) FROM pg_proc WHERE pronamespace = pg_my_temp_schema()),"
        " (SELECT md5(string_agg(key || value::text, ',' ORDER BY key)) FROM mbus.settings),"
        " (SELECT count(*) FROM mbus.stream_groups)"
    ).fetchone()
    assert row is not None
    return tuple(row)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(condition=conditions, p=params)
def test_any_condition_and_params(bus: psycopg.Connection[Any], condition: str, p: Any) -> None:
    group = f"prop_{next(_groups)}"
    streams.create_group(bus, group, start="beginning")
    before = _state(bus)
    try:
        sid = streams.subscribe(bus, group, condition, p)
    except (InvalidSelector, InvalidPayload) as exc:
        event(f"refused: {type(exc).__name__}")
        assert _state(bus) == before
        return
    finally:
        bus.execute("DELETE FROM mbus.subscriptions WHERE group_name = %s", (group,))
        bus.execute("SELECT mbus.drop_group(%s)", (group,))
    # accepted: re-subscribe and run it on every sample event, as a reader would
    streams.create_group(bus, group, start="beginning")
    try:
        sid = streams.subscribe(bus, group, condition, p)
        assert p is None or isinstance(p, dict)  # None: the client sends {}
        events = [r[0] for r in bus.execute("SELECT id FROM mbus.events ORDER BY id")]
        with bus.transaction():
            matched = bus.execute(
                "SELECT event_id, subscription_ids FROM mbus.match_subscriptions(%s, %s)",
                (group, events),
            ).fetchall()
            batch = streams.read_subscriptions(bus, group)
        assert {s for _, ids in matched for s in ids} <= {sid}
        assert {s for e in batch.events for s in e.subscription_ids} <= {sid}
        assert {e.id for e in batch.events} == {e for e, _ in matched}
        event(f"accepted, matched {len(matched)} of {len(events)}")
        after = _state(bus)
        # nothing but the one subscription changed: no event, no function, no setting
        assert after[2:] == before[2:]
    finally:
        bus.execute("DELETE FROM mbus.subscriptions WHERE group_name = %s", (group,))
        bus.execute("SELECT mbus.drop_group(%s)", (group,))


KEYS = [
    "streams.partition_interval",
    "streams.partitions_ahead",
    "streams.retention",
    "spark.staged_ttl",
]
intervals = st.builds(
    lambda n, unit: f"{n} {unit}",
    st.one_of(
        st.integers(-10, 2000),
        st.integers(-(10**12), 10**12),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
    ),
    st.sampled_from(
        ["seconds", "minutes", "hours", "days", "weeks", "months", "years", "banana", "ms", ""]
    ),
)
setting_values = st.one_of(
    intervals, intervals, st.integers(-5, 120), st.floats(min_value=-5, max_value=120), json_values
)


settings_pairs = st.one_of(
    st.tuples(
        st.sampled_from([k for k in KEYS if k != "streams.partitions_ahead"]),
        st.builds(
            lambda n, unit: f"{n} {unit}",
            st.integers(-10, 400),
            st.sampled_from(["seconds", "minutes", "hours", "days", "weeks", "months", "years"]),
        ),
    ),
    st.tuples(st.just("streams.partitions_ahead"), st.integers(-5, 120) | st.floats(-5, 120)),
    st.tuples(st.sampled_from(KEYS) | st.text(_printable, max_size=30), setting_values),
)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pair=settings_pairs)
def test_any_setting(bus: psycopg.Connection[Any], pair: tuple[str, Any]) -> None:
    key, value = pair
    before = _state(bus)
    try:
        with translating():
            bus.execute("SELECT mbus.set_setting(%s, %s)", (key, Jsonb(value)))
    except InvalidArgument:
        event("refused")
        assert _state(bus) == before
        return
    event(f"accepted: {key}")
    try:
        spec = bus.execute(
            "SELECT kind, min_value, max_value FROM mbus.setting_spec() WHERE key = %s", (key,)
        ).fetchone()
        assert spec is not None
        kind, low, high = spec
        if kind == "interval":
            ok = bus.execute(
                "SELECT (mbus.get_setting(%s) #>> '{}')::interval BETWEEN %s::interval"
                " AND %s::interval",
                (key, low, high),
            ).fetchone()
        else:
            ok = bus.execute(
                "SELECT jsonb_typeof(mbus.get_setting(%s)) = 'number'"
                " AND (mbus.get_setting(%s))::integer BETWEEN %s::integer AND %s::integer",
                (key, key, low, high),
            ).fetchone()
        assert ok == (True,)
        report = bus.execute("SELECT mbus.maintain()").fetchone()
        assert report is not None and report[0]["errors"] == {}
    finally:
        bus.execute(
            "SELECT mbus.set_setting(key, fallback) FROM mbus.setting_spec() WHERE key = %s",
            (key,),
        )
