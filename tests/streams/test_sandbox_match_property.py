"""The sandbox's hash-joined matching returns exactly the plain join's matches.

``mbus._match_sandboxed`` runs a condition that begins with an equality of a params key and an
event field as a hash join on those keys. The oracle is the owner's path (``mbus._match_query``:
the plain join ON the condition, with the reader's role): the same condition and params stored
once as the owner's and once as a sandboxed subscription must match the same events. Params and
events are drawn so that keys are often equal, unequal, missing, JSON null, numbers written two
ways, arrays and objects (where containment is not equality); conditions include texts whose
leading equality is not a conjunct of the whole (an OR, a parenthesis closed early), which must
not be narrowed.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb

FIELDS = ["e.topic", "e.key", "e.payload->>'x'", "(e.payload->>'x')"]
LEADS = (
    [f"s.params @> jsonb_build_object('k', {f})" for f in [*FIELDS, "e.payload->'x'"]]
    + [f"s.params->>'k' = {f}" for f in FIELDS]
    + [f"{f} = (s.params->>'k')" for f in FIELDS]
    + ["s.params->'k' = e.payload->'x'", "e.payload->'x' = S.PARAMS -> 'k'"]
)
TAILS = [
    "",
    " AND e.id % 2 = 0",
    " AND (e.topic <> 'b' AND s.params ? 'k')",
    " AND e.topic <> 'it''s'",
    " AND true) = (false",  # the equality is not a conjunct of the whole
    " AND e.id > 0 OR e.topic = 'a'",  # nor here
    " AND e.id BETWEEN 1 AND 3",
]
VALUES: list[Any] = ["a", "b", "1", 1, 1.0, 2, None, True, ["a"], {"y": 1}, [1, 2]]


@st.composite
def _params(draw: st.DrawFn) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if draw(st.booleans()) or draw(st.booleans()):
        params["k"] = draw(st.sampled_from(VALUES))
    if draw(st.booleans()):
        params["other"] = draw(st.sampled_from(VALUES))
    return params


@st.composite
def _event(draw: st.DrawFn) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    if draw(st.booleans()) or draw(st.booleans()):
        payload["x"] = draw(st.sampled_from(VALUES))
    return {
        "topic": draw(st.sampled_from(["a", "b", "1"])),
        "key": draw(st.sampled_from([None, "a", "1", "true"])),
        "payload": payload,
    }


def _ev(payload: dict[str, Any]) -> dict[str, Any]:
    return {"topic": "a", "key": None, "payload": payload}


def _matches(conn: psycopg.Connection[Any], group: str, events: list[dict[str, Any]]) -> Any:
    rows = conn.execute(
        "SELECT m.event_id, p.params FROM mbus._match(%s, (SELECT array_agg(ROW(NULL, x.id,"
        " x.topic, x.key, x.payload, '{}', now())::mbus.stream_row ORDER BY x.id)"
        " FROM jsonb_to_recordset(%s) AS x (id bigint, topic text, key text, payload jsonb)))"
        " AS m CROSS JOIN LATERAL unnest(m.subscription_ids) AS u (id)"
        " JOIN mbus.subscriptions AS p ON p.id = u.id",
        (group, Jsonb([{"id": i + 1, **e} for i, e in enumerate(events)])),
    ).fetchall()
    return sorted((int(event_id), json.dumps(params, sort_keys=True)) for event_id, params in rows)


@settings(
    derandomize=True,
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
# pairs where the key's text and its JSON differ, and containment of arrays and objects
@example(
    lead="s.params @> jsonb_build_object('k', e.payload->>'x')",
    tail="",
    params=[{"k": "1"}, {"k": 1}, {"k": "true"}, {"k": None}],
    events=[_ev({"x": 1}), _ev({"x": "1"}), _ev({"x": True}), _ev({})],
)
@example(
    lead="s.params->>'k' = e.payload->>'x'",
    tail=" AND e.id > 0",
    params=[{"k": 1}, {"k": "1"}, {"k": ["a"]}, {"k": None}],
    events=[_ev({"x": 1}), _ev({"x": ["a"]}), _ev({"x": "1"}), _ev({"x": None})],
)
@example(
    lead="s.params @> jsonb_build_object('k', e.payload->'x')",
    tail="",
    params=[{"k": ["a", "b"]}, {"k": {"y": 1, "z": 2}}, {"k": None}, {}, {"k": "a"}],
    events=[_ev({"x": ["a"]}), _ev({"x": {"y": 1}}), _ev({"x": None}), _ev({}), _ev({"x": "a"})],
)
@given(
    lead=st.sampled_from(LEADS),
    tail=st.sampled_from(TAILS),
    params=st.lists(_params(), min_size=1, max_size=12),
    events=st.lists(_event(), min_size=1, max_size=12),
)
def test_the_sandbox_matches_what_the_plain_join_matches(
    conn: psycopg.Connection[Any],
    lead: str,
    tail: str,
    params: list[dict[str, Any]],
    events: list[dict[str, Any]],
) -> None:
    condition = lead + tail
    with conn.transaction(force_rollback=True):
        for group, full in (("owner", True), ("sandbox", False)):
            conn.execute("SELECT mbus.create_group(%s)", (group,))
            conn.execute(
                "INSERT INTO mbus.subscriptions (group_name, condition, params, full_language)"
                " SELECT %s, %s, p, %s FROM jsonb_array_elements(%s) AS p"
                " ON CONFLICT DO NOTHING",
                (group, condition, full, Jsonb(params)),
            )
        owner = _matches(conn, "owner", events)
        sandboxed = _matches(conn, "sandbox", events)
        assert conn.execute("SELECT current_setting('mbus.match_failed', true)").fetchone() in (
            (None,),
            ("",),
        )
    assert sandboxed == owner


def test_the_leading_key_is_found_only_where_it_is_a_conjunct_of_the_whole(
    conn: psycopg.Connection[Any],
) -> None:
    found = {
        "s.params @> jsonb_build_object('room', e.payload->'room')": [
            "contains",
            None,
            "room",
            "e.payload->'room'",
        ],
        "s.params->>'user' = e.key AND e.topic LIKE 'chat.%'": ["equals", "->>", "user", "e.key"],
        "e.topic = (s.params->>'t') and (e.id > 1 AND e.id < 9)": ["equals", "->>", "t", "e.topic"],
        "s.params->>'user' = e.key AND e.topic <> 'a'')'": ["equals", "->>", "user", "e.key"],
    }
    not_found = [
        "e.topic <> '' AND s.params->>'user' = e.key",  # not first
        "s.params->>'user' = e.key OR e.topic = 'all'",
        "s.params->>'user' = e.key AND true) = (false",
        "s.params->>'user' = e.key AND e.topic <> '(' ) = (true",
        "s.params->>'user' = e.key::text",
        "s.params->>'user' = e.key AND \"or\"",
        "s.params @> jsonb_build_object('k', e.topic, 'j', e.key)",
        "s.params->>'a b' = e.key",
    ]
    for condition, expected in found.items():
        row = conn.execute("SELECT mbus._match_leading_key(%s)", (condition,)).fetchone()
        assert row == (expected,), condition
    for condition in not_found:
        row = conn.execute("SELECT mbus._match_leading_key(%s)", (condition,)).fetchone()
        assert row == (None,), condition
