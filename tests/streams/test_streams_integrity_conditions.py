"""Subscription conditions: checked exactly as they run, static, boolean, and isolated."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import sql

from pgmbus import streams
from pgmbus.errors import InvalidSelector
from tests.streams.conftest import Connect

BY_TOPIC = "s.params @> jsonb_build_object('topic', e.topic)"


def _temp_functions(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_proc WHERE pronamespace = pg_my_temp_schema()"
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_condition_cannot_escape_its_wrapper_into_other_groups(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "evil")
    streams.create_group(conn, "good")
    mine = streams.subscribe(conn, "evil", "e.topic = 'x') OR (true")
    theirs = streams.subscribe(conn, "good", BY_TOPIC, {"topic": "y"})
    other = streams.subscribe(conn, "good", "e.topic = 'never'")
    y = streams.publish(conn, "y", {})
    z = streams.publish(conn, "z", {})
    # the text means (e.topic = 'x') OR (true) for its own subscription, and nothing else
    evil = streams.read_subscriptions(conn, "evil")
    assert {e.id: e.subscription_ids for e in evil.events} == {y: (mine,), z: (mine,)}
    good = streams.read_subscriptions(conn, "good")
    assert {e.id: e.subscription_ids for e in good.events} == {y: (theirs,)}
    assert other not in {s for e in good.events for s in e.subscription_ids}


@pytest.mark.parametrize(
    "condition",
    [
        "1",
        "e.topic",
        "e.payload",
        "s.params",
        "'t'",
        "true) LIMIT (1",
        "true) GROUP BY e.id UNION SELECT 1, ARRAY[s.id] FROM mbus.subscriptions AS s WHERE (true",
        "exists (SELECT 1 FROM mbus.events)",
        "e.id IN (SELECT id FROM mbus.events)",
        "e.topic = ANY (ARRAY(SELECT topic FROM mbus.events))",
        "mbus.publish('side.effect', '{}') > 0",
        "random() > 0.5",
        "nextval('mbus.event_seq') > 0",
        "set_config('pgmbus.x', 'y', false) = 'y'",
        "pg_notify('x', 'y') IS NULL",
        "count(*) > 0",
        "row_number() OVER () > 1",
        "generate_series(1, 2) > 1",
        "cardinality($1) > 0",
        "e.nope = 1",
        "1 / 0 = 1",
        pytest.param("e.topic = 'x' OR " * 1000 + "true", id="longer-than-8-kB"),
    ],
)
def test_bad_conditions_are_refused_and_change_nothing(connect: Connect, condition: str) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g")
    before = conn.execute("SELECT count(*) FROM mbus.events").fetchone()
    with pytest.raises(InvalidSelector):
        streams.subscribe(conn, "g", condition)
    assert conn.execute("SELECT count(*) FROM mbus.subscriptions").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM mbus.events").fetchone() == before
    assert _temp_functions(conn) == 0


@pytest.mark.parametrize(
    "condition",
    [
        BY_TOPIC,
        "e.published_at <= now() AND e.topic LIKE 'a%'",
        "(e.payload->>'n')::int > 5",
        "coalesce(e.key, '') = coalesce(s.params->>'key', '')",
        "e.headers IS NULL OR e.headers ? 'trace'",
        "e.payload @> s.params",
        "lower(e.topic) = 'a' AND current_user IS NOT NULL",
    ],
)
def test_static_boolean_conditions_are_accepted(connect: Connect, condition: str) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g")
    assert streams.subscribe(conn, "g", condition) > 0
    assert _temp_functions(conn) == 0


def test_the_check_does_not_clash_with_the_callers_temporary_objects(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g")
    conn.execute("CREATE TEMPORARY TABLE t (x int)")
    conn.execute("CREATE FUNCTION pg_temp.f() RETURNS int LANGUAGE sql RETURN 1")
    assert streams.subscribe(conn, "g", BY_TOPIC, {"topic": "a"}) > 0
    assert _temp_functions(conn) == 1


def test_a_condition_failing_at_read_time_skips_only_its_own_events(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "g")
    streams.create_group(conn, "h")
    numeric = streams.subscribe(conn, "g", "(e.payload->>'n')::int > 5")
    by_topic = streams.subscribe(conn, "g", BY_TOPIC, {"topic": "t"})
    elsewhere = streams.subscribe(conn, "h", "(e.payload->>'n')::int > 5")
    bad = streams.publish(conn, "t", {"n": "abc"})
    big = streams.publish(conn, "t", {"n": 7})
    small = streams.publish(conn, "u", {"n": 1})
    warnings: list[str] = []
    conn.add_notice_handler(lambda d: warnings.append(str(d.message_primary)))
    batch = streams.read_subscriptions(conn, "g")
    got = {e.id: e.subscription_ids for e in batch.events}
    assert got == {bad: (by_topic,), big: tuple(sorted((numeric, by_topic)))}
    assert small not in got
    assert any(str(numeric) in w and str(bad) in w for w in warnings), warnings
    assert streams.counters(conn).get("subscription_errors") == 1
    assert batch.cursor is not None
    streams.commit(conn, "g", batch.cursor)
    # the other group's copy of the same condition fails alone too, and match_subscriptions
    # reports no phantom row for it
    assert [e.id for e in streams.read_subscriptions(conn, "h").events] == [big]
    rows = conn.execute(
        "SELECT event_id, subscription_ids FROM mbus.match_subscriptions('g', %s) "
        "ORDER BY event_id",
        ([bad, big, small],),
    ).fetchall()
    assert rows == [(bad, [by_topic]), (big, sorted([numeric, by_topic]))]
    assert elsewhere > 0


def test_the_run_text_still_matches_params_through_the_index(connect: Connect) -> None:
    conn = connect(autocommit=True)
    streams.create_group(conn, "many")
    conn.execute(
        "INSERT INTO mbus.subscriptions (group_name, condition, params) "
        "SELECT 'many', %s, jsonb_build_object('topic', 'u' || i) "
        "FROM generate_series(1, 10000) AS i",
        (BY_TOPIC,),
    )
    conn.execute("ANALYZE mbus.subscriptions")
    row = conn.execute("SELECT mbus._match_query(%s)", (BY_TOPIC,)).fetchone()
    assert row is not None
    conn.execute("PREPARE m (mbus.stream_row[], text, text, bigint[]) AS " + str(row[0]))
    explain = sql.SQL(
        "EXPLAIN EXECUTE m (ARRAY[ROW(NULL, 1, 'u5', NULL, '{{}}', NULL, now())"
        "::mbus.stream_row], 'many', {}, NULL)"
    ).format(sql.Literal(BY_TOPIC))
    plan = "\n".join(str(r[0]) for r in conn.execute(explain))
    assert "subscriptions_params" in plan, plan


def test_one_subscriptions_params_cannot_fail_the_others_of_its_condition(
    connect: Connect,
) -> None:
    """Subscriptions share a condition; one's params make it fail on every event (a bad
    cast): the others still get their events, and the failing one is named alone."""
    conn = connect(autocommit=True)
    streams.create_group(conn, "g")
    by_n = "(s.params->>'n')::int = (e.payload->>'n')::int"
    good = [streams.subscribe(conn, "g", by_n, {"n": n}) for n in range(1, 8)]
    hostile = streams.subscribe(conn, "g", by_n, {"n": "abc"})
    late = streams.subscribe(conn, "g", by_n, {"n": 5, "tag": "late"})  # after the hostile one
    five = streams.publish(conn, "t", {"n": 5})
    two = streams.publish(conn, "t", {"n": 2})
    warnings: list[str] = []
    conn.add_notice_handler(lambda d: warnings.append(str(d.message_primary)))
    batch = streams.read_subscriptions(conn, "g")
    got = {e.id: e.subscription_ids for e in batch.events}
    assert got == {five: (good[4], late), two: (good[1],)}
    named = [w for w in warnings if "skipped for them" in w]
    assert len(named) == 1 and f"subscriptions {{{hostile}}} " in named[0], named
    assert streams.counters(conn).get("subscription_errors") == 1
    rows = conn.execute(
        "SELECT event_id, subscription_ids FROM mbus.match_subscriptions('g', %s) "
        "ORDER BY event_id",
        ([five, two],),
    ).fetchall()
    assert rows == [(five, [good[4], late]), (two, [good[1]])]


@pytest.mark.parametrize(
    "call",
    [
        "SELECT mbus.publish_batch('t', ARRAY[['{}','{}'],['{}','{}']]::jsonb[])",
        "SELECT mbus.publish_batch('t', ARRAY['{}']::jsonb[], keys => ARRAY[['a']])",
        "SELECT mbus.configure_group('g', max_attempts => -1)",
        "SELECT mbus.configure_group('g', retry_backoff => '-1 day')",
        "SELECT mbus.subscribe('g', 'true', expires_after => '-1 second')",
        "SELECT mbus.subscribe('g', 'true', expires_after => '0')",
    ],
)
def test_bad_stream_arguments_are_mb006_and_change_nothing(connect: Connect, call: str) -> None:
    """Main: 0A000, 23514 (a CHECK's name), or a 2-D keys array accepted."""
    conn = connect(autocommit=True)
    streams.create_group(conn, "g")
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(call)
    assert caught.value.sqlstate == "MB006", caught.value
    row = conn.execute(
        "SELECT (SELECT count(*) FROM mbus.events), (SELECT count(*) FROM mbus.subscriptions),"
        " (SELECT max_attempts FROM mbus.stream_groups WHERE name = 'g')"
    ).fetchone()
    assert row is not None and row[:2] == (0, 0)
