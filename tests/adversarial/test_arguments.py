"""Wrong-typed arguments at every public call: a typed error naming the argument, nothing stored.

Hypothesis throws values of the wrong type, out of range, with NUL characters or lone
surrogates (in strings and inside JSON data) at the queue client (``Bus``), the streams client,
the timers store and the scale-out ``Cluster``; each call must raise ``InvalidArgument`` (or its
subclass ``InvalidPayload``) whose message names the argument, and the database must hold
exactly what it held before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgmbus import streams
from pgmbus.errors import InvalidArgument
from pgmbus.queues import Bus
from pgmbus.scaleout import Cluster, move_queue
from pgmbus.timers import store as sync_store

# --- wrong values ------------------------------------------------------------------------------
_NUL_TEXT = st.tuples(st.text(max_size=4), st.text(max_size=4)).map(lambda p: p[0] + "\x00" + p[1])
_UNSTORABLE_TEXT = st.one_of(_NUL_TEXT, st.just("a\ud800b"))
_OBJECT = st.builds(object)
_NOT_A_NUMBER = st.one_of(st.text(max_size=4), st.binary(max_size=3), _OBJECT, st.dates())
_FRACTION = st.floats(allow_nan=True).filter(lambda f: not (math.isfinite(f) and f == int(f)))


def _wrong_int(low: int, high: int) -> st.SearchStrategy[Any]:
    """Not an int in low..high: floats (1.5 must not become 2), numeric strings, bools, ..."""
    return st.one_of(
        _FRACTION,
        st.integers().map(str),  # "5"
        st.booleans(),
        _NOT_A_NUMBER,
        st.integers(max_value=low - 1),
        st.integers(min_value=high + 1),
        st.lists(st.integers(), max_size=2),
    )


def _two_priorities(v: Any) -> bool:
    """One valid priority per message of a batch of two."""
    return (
        isinstance(v, list) and len(v) == 2 and all(type(p) is int and 0 <= p <= 32767 for p in v)
    )


_WRONG_TEXT = st.one_of(
    st.integers(), st.floats(), st.booleans(), st.binary(max_size=3), _UNSTORABLE_TEXT, _OBJECT
)
_WRONG_NAME = st.one_of(st.integers(), st.floats(), st.booleans(), st.binary(max_size=3), _OBJECT)
_WRONG_TEXTS = st.one_of(
    st.integers(),
    st.floats(),
    st.booleans(),
    _UNSTORABLE_TEXT,
    st.lists(st.one_of(st.integers(), _UNSTORABLE_TEXT), min_size=1, max_size=3),
    st.dictionaries(st.text(max_size=2), st.text(max_size=2), min_size=1, max_size=2),
)
_WRONG_MOMENT = st.one_of(st.dates(), st.text(max_size=10), st.integers(), st.floats())
_WRONG_SECONDS = st.one_of(
    st.text(max_size=3),
    st.booleans(),
    st.just(float("nan")),
    st.just(float("inf")),
    st.floats(max_value=-1e-9, allow_infinity=False),
    st.integers(max_value=-1),
    _OBJECT,
)
_WRONG_FLAG = st.one_of(st.integers(), st.text(max_size=3), st.none())
_BAD_LEAF = st.one_of(
    _UNSTORABLE_TEXT,
    st.just(float("nan")),
    st.just(float("inf")),
    st.binary(max_size=3),
    st.dates(),
    _OBJECT,
    st.frozensets(st.integers(), max_size=2),
)
_WRONG_JSON_OBJECT = st.one_of(
    st.dictionaries(st.text(max_size=3), _BAD_LEAF, min_size=1, max_size=3),
    st.dictionaries(
        st.text(max_size=3),
        st.lists(_BAD_LEAF, min_size=1, max_size=2).map(lambda xs: {"deep": [1, {"x": xs}]}),
        min_size=1,
        max_size=2,
    ),
    st.dictionaries(st.one_of(st.integers(), st.booleans()), st.integers(), min_size=1),
    st.dictionaries(_UNSTORABLE_TEXT, st.integers(), min_size=1, max_size=2),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.integers(),
)
_WRONG_JSON_VALUE = st.one_of(
    _BAD_LEAF,
    st.lists(_BAD_LEAF, min_size=1, max_size=2),
    _WRONG_JSON_OBJECT.filter(lambda v: isinstance(v, dict)),
)

_NOW = datetime(2030, 1, 1, tzinfo=UTC)


# --- the world the calls act on ----------------------------------------------------------------
class World:
    """One database with a queue, a stream group and a timers client; a map placing the queue."""

    def __init__(self, dsn: str, home: str) -> None:
        self.dsn, self.home = dsn, home
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.home_conn = psycopg.connect(home, autocommit=True)
        self.bus = Bus(dsn).open()
        self.bus.create_queue("jobs")
        streams.create_group(self.conn, "readers", start="beginning")
        self.client_id = sync_store.add_client(self.conn, "owner").id
        self.cluster = Cluster(home, refresh=0.0)
        self.cluster.add_server("s1", dsn)
        self.cluster.place("queue", "jobs", ["s1"])
        self.cluster.place("topic", "clicks", ["s1"])

    def state(self) -> tuple[Any, ...]:
        """Everything a call could have stored: messages, iids, events, callbacks, the map."""
        row = self.conn.execute(
            "SELECT (SELECT count(*) FROM mbus.q_jobs), (SELECT count(*) FROM mbus.client_iids),"
            " (SELECT count(*) FROM mbus.events), (SELECT count(*) FROM mbus.timer_callbacks),"
            " (SELECT count(*) FROM mbus.stream_groups), (SELECT count(*) FROM mbus.dmq),"
            " (SELECT count(*) FROM mbus.timer_schedules),"
            " (SELECT count(*) FROM mbus.stream_retries)"
        ).fetchone()
        placed = self.home_conn.execute(
            "SELECT (SELECT array_agg(name ORDER BY name) FROM mbus.placement_server),"
            " (SELECT array_agg(kind || name ORDER BY kind, name) FROM mbus.placement)"
        ).fetchone()
        return (row, placed)

    def close(self) -> None:
        self.cluster.close()
        self.bus.close()
        self.conn.close()
        self.home_conn.close()


@pytest.fixture(scope="module")
def world(pg_server: Any) -> Iterator[World]:
    names = [pg_server.create_database(installed=True) for _ in range(2)]
    dsn, home = (pg_server.dsn(n) for n in names)
    made = World(dsn, home)
    yield made
    made.close()
    for name in names:
        pg_server.drop_database(name)


# --- the calls: (name, argument, wrong values, call with that argument set to a value) ----------
Call = Callable[[World, Any], Any]


def _case(call: str, argument: str, wrong: st.SearchStrategy[Any], run: Call) -> Any:
    return pytest.param(argument, wrong, run, id=f"{call}:{argument}")


CASES = [
    # Bus (the sync twin of AsyncBus; both are generated from one source)
    _case("post", "queue", _WRONG_NAME, lambda w, v: w.bus.post(v, {"n": 1})),
    _case("post", "data", _WRONG_JSON_OBJECT, lambda w, v: w.bus.post("jobs", v)),
    _case("post", "headers", _WRONG_JSON_OBJECT, lambda w, v: w.bus.post("jobs", {}, headers=v)),
    _case(
        "post", "properties", _WRONG_JSON_OBJECT, lambda w, v: w.bus.post("jobs", {}, properties=v)
    ),
    _case(
        "post", "priority", _wrong_int(0, 32767), lambda w, v: w.bus.post("jobs", {}, priority=v)
    ),
    _case("post", "iid", _WRONG_TEXT, lambda w, v: w.bus.post("jobs", {}, iid=v)),
    _case("post", "dedupe_key", _WRONG_TEXT, lambda w, v: w.bus.post("jobs", {}, dedupe_key=v)),
    _case(
        "post", "consume_after", _WRONG_TEXTS, lambda w, v: w.bus.post("jobs", {}, consume_after=v)
    ),
    _case(
        "post", "delayed_until", _WRONG_MOMENT, lambda w, v: w.bus.post("jobs", {}, delayed_until=v)
    ),
    _case("post", "expires", _WRONG_MOMENT, lambda w, v: w.bus.post("jobs", {}, expires=v)),
    _case(
        "post_batch",
        "data",
        st.one_of(_WRONG_JSON_OBJECT.map(lambda v: [{"ok": 1}, v]), st.text(min_size=1)),
        lambda w, v: w.bus.post_batch("jobs", v),
    ),
    _case(
        "post_batch",
        "priority",
        st.one_of(
            # a list of two priorities in range is right here: one per message
            _wrong_int(0, 32767).filter(lambda v: not _two_priorities(v)),
            _wrong_int(0, 32767).map(lambda v: [0, v]),
        ),
        lambda w, v: w.bus.post_batch("jobs", [{}, {}], priority=v),
    ),
    _case(
        "consume", "limit", _wrong_int(0, 2**31 - 1), lambda w, v: w.bus.consume("jobs", limit=v)
    ),
    _case("consume", "wait", _WRONG_SECONDS, lambda w, v: w.bus.consume("jobs", wait=v)),
    _case("consume", "now", _WRONG_MOMENT, lambda w, v: w.bus.consume("jobs", now=v)),
    _case("consume", "consumer", _WRONG_NAME, lambda w, v: w.bus.consume("jobs", v)),
    _case("lease", "lease", _WRONG_SECONDS, lambda w, v: w.bus.lease("jobs", lease=v)),
    _case(
        "lease",
        "max_attempts",
        _wrong_int(1, 2**31 - 1),
        lambda w, v: w.bus.lease("jobs", max_attempts=v),
    ),
    _case("take", "iid", _WRONG_TEXT, lambda w, v: w.bus.take(v)),
    _case("peek", "iid", _WRONG_TEXT, lambda w, v: w.bus.peek("jobs", v)),
    _case("create_queue", "queue", _WRONG_NAME, lambda w, v: w.bus.create_queue(v)),
    _case(
        "create_consumer",
        "selector",
        _WRONG_TEXT,
        lambda w, v: w.bus.create_consumer("jobs", "c", v),
    ),
    _case("dmq", "limit", _wrong_int(0, 2**31 - 1), lambda w, v: w.bus.dmq(limit=v)),
    # the streams client
    _case("publish", "topic", _WRONG_TEXT, lambda w, v: streams.publish(w.conn, v, {"n": 1})),
    _case("publish", "payload", _WRONG_JSON_VALUE, lambda w, v: streams.publish(w.conn, "t", v)),
    _case("publish", "key", _WRONG_TEXT, lambda w, v: streams.publish(w.conn, "t", {}, key=v)),
    _case(
        "publish",
        "headers",
        _WRONG_JSON_OBJECT,
        lambda w, v: streams.publish(w.conn, "t", {}, headers=v),
    ),
    _case(
        "publish",
        "subscription_id",
        _wrong_int(1, 2**63 - 1),
        lambda w, v: streams.publish(w.conn, "t", {}, subscription_id=v),
    ),
    _case(
        "publish_batch",
        "payloads",
        st.one_of(_WRONG_JSON_VALUE.map(lambda v: [{"ok": 1}, v]), st.text(min_size=1)),
        lambda w, v: streams.publish_batch(w.conn, "t", v),
    ),
    _case(
        "publish_batch",
        "keys",
        _WRONG_TEXT.filter(lambda v: v is not None).map(lambda v: ["k", v]),
        lambda w, v: streams.publish_batch(w.conn, "t", [{}, {}], keys=v),
    ),
    _case(
        "create_group",
        "slots",
        _wrong_int(1, 2**31 - 1),
        lambda w, v: streams.create_group(w.conn, "g", slots=v),
    ),
    _case(
        "read_next",
        "limit",
        _wrong_int(1, 2**31 - 1),
        lambda w, v: streams.read_next(w.conn, "readers", limit=v),
    ),
    _case("read_next", "group", _WRONG_TEXT, lambda w, v: streams.read_next(w.conn, v)),
    # the timers store
    _case(
        "timers.create",
        "client_id",
        _wrong_int(1, 2**63 - 1),
        lambda w, v: sync_store.create(w.conn, v, "g", "e", _NOW, "http://127.0.0.1/x"),
    ),
    _case(
        "timers.create",
        "group_key",
        _WRONG_TEXT,
        lambda w, v: sync_store.create(w.conn, w.client_id, v, "e", _NOW, "http://127.0.0.1/x"),
    ),
    _case(
        "timers.create",
        "url",
        _WRONG_TEXT,
        lambda w, v: sync_store.create(w.conn, w.client_id, "g", "e", _NOW, v),
    ),
    _case(
        "timers.create",
        "run_at",
        _WRONG_MOMENT,
        lambda w, v: sync_store.create(w.conn, w.client_id, "g", "e", v, "http://127.0.0.1/x"),
    ),
    _case(
        "timers.create",
        "context",
        _WRONG_JSON_OBJECT,
        lambda w, v: sync_store.create(
            w.conn, w.client_id, "g", "e", _NOW, "http://127.0.0.1/x", context=v
        ),
    ),
    _case(
        "timers.create_schedule",
        "interval_s",
        _wrong_int(1, 2**63 - 1),
        lambda w, v: sync_store.create_schedule(
            w.conn, w.client_id, "every", "http://127.0.0.1/x", interval_s=v
        ),
    ),
    _case(
        "timers.create_schedule",
        "timezone",
        _WRONG_TEXT,
        lambda w, v: sync_store.create_schedule(
            w.conn, w.client_id, "every", "http://127.0.0.1/x", interval_s=60, timezone=v
        ),
    ),
    _case(
        "timers.list_callbacks",
        "limit",
        _wrong_int(0, 2**31 - 1),
        lambda w, v: sync_store.list_callbacks(w.conn, w.client_id, limit=v),
    ),
    _case(
        "streams.retry_event",
        "error",
        _WRONG_TEXT,
        lambda w, v: streams.retry_event(w.conn, "readers", 1, error=v),
    ),
    _case(
        "streams.read_retries",
        "limit",
        _wrong_int(1, 2**31 - 1),
        lambda w, v: streams.read_retries(w.conn, "readers", limit=v),
    ),
    # the scale-out cluster
    _case("Cluster.post", "queue", _WRONG_TEXT, lambda w, v: w.cluster.post(v, {"n": 1})),
    _case("Cluster.post", "data", _WRONG_JSON_OBJECT, lambda w, v: w.cluster.post("jobs", v)),
    _case(
        "Cluster.publish", "key", _WRONG_TEXT, lambda w, v: w.cluster.publish("clicks", {}, key=v)
    ),
    _case(
        "Cluster.publish",
        "payload",
        _WRONG_JSON_VALUE,
        lambda w, v: w.cluster.publish("clicks", v, key="k"),
    ),
    _case("Cluster.add_server", "name", _WRONG_TEXT, lambda w, v: w.cluster.add_server(v, w.dsn)),
    _case(
        "Cluster.add_server", "conninfo", _WRONG_TEXT, lambda w, v: w.cluster.add_server("s9", v)
    ),
    _case(
        "Cluster.place",
        "servers",
        st.one_of(st.just("s1"), _WRONG_TEXTS.filter(lambda v: not isinstance(v, str | dict))),
        lambda w, v: w.cluster.place("topic", "other", v),
    ),
    _case(
        "move_queue",
        "batch",
        _wrong_int(1, 2**63 - 1),
        lambda w, v: move_queue(w.home, "jobs", "s1", batch=v),
    ),
    _case(
        "move_queue",
        "grace",
        _WRONG_SECONDS,
        lambda w, v: move_queue(w.home, "jobs", "s1", grace=v),
    ),
]


@pytest.mark.parametrize(("argument", "wrong", "run"), CASES)
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_wrong_argument_is_refused_by_name_and_changes_nothing(
    world: World, argument: str, wrong: st.SearchStrategy[Any], run: Call, data: st.DataObject
) -> None:
    value = data.draw(wrong, label=argument)
    before = world.state()
    with pytest.raises(InvalidArgument) as caught:
        run(world, value)
    assert argument in str(caught.value), (argument, value, caught.value)
    assert caught.value.sqlstate in ("MB005", "MB006")
    assert world.state() == before


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda w: w.bus.post("jobs", {}, priority=1.5), "priority"),
        (lambda w: w.bus.post("jobs", {}, priority="5"), "priority"),
        (lambda w: w.bus.post("jobs", {}, priority=True), "priority"),
        (lambda w: w.bus.post("jobs", {}, dedupe_key="a\x00b"), "dedupe_key"),
        (lambda w: w.bus.post("jobs", {}, iid="jobs.1\x00"), "iid"),
        (lambda w: w.bus.post("jobs", {"text": "a\x00b"}), "data['text']"),
        (lambda w: w.bus.post("jobs", {}, consume_after=5), "consume_after"),
        (lambda w: w.bus.post("jobs", {}, delayed_until=date(2030, 1, 1)), "delayed_until"),
        (lambda w: w.bus.lease("jobs", lease=timedelta(seconds=-1)), "lease"),
    ],
    ids=[
        "float",
        "numeric-str",
        "bool",
        "nul-dedupe",
        "nul-iid",
        "nul-data",
        "int-after",
        "date",
        "neg",
    ],
)
def test_the_reported_cases(world: World, call: Callable[[World], Any], expected: str) -> None:
    """Main: 1.5 stored priority 2, "5" was accepted, NUL gave a driver error, consume_after=5 a
    TypeError."""
    before = world.state()
    with pytest.raises(InvalidArgument, match=f"^{expected.replace('[', '.').replace(']', '.')}"):
        call(world)
    assert world.state() == before


def test_right_arguments_still_work(world: World) -> None:
    """The checks refuse only what is wrong: the same calls with right values store."""
    iid = world.bus.post(
        "jobs",
        {"n": 1.5, "ok": True, "list": [1, "x", None]},
        headers={"h": "v"},
        priority=7,
        consume_after=[],
        delayed_until=datetime.now(UTC) - timedelta(seconds=1),
    )
    (got,) = world.bus.consume("jobs", limit=1)
    assert (got.iid, got.data["n"]) == (iid, 1.5)
    assert streams.publish(world.conn, "t", [1, "two"], key="k") > 0
    for scalar in (5, "text", None, True, 2.5):  # JSON scalars are payloads too
        assert streams.publish(world.conn, "t", scalar) > 0
