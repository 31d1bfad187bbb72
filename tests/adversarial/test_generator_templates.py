"""The queue generator's named substitution (mbus.fill_template) and what it must keep intact.

Every generated function is filled from templates with ``{name}`` tokens; a value put in is SQL
quoted where its name is defined, and is never scanned again: a selector holding braces or
something that looks like a token reaches the generated function as written.
"""

from __future__ import annotations

import psycopg
import pytest


def _fill(conn: psycopg.Connection[tuple[object, ...]], template: str, names: str) -> str:
    row = conn.execute("SELECT mbus.fill_template(%s, %s::jsonb)", (template, names)).fetchone()
    assert row is not None
    return str(row[0])


def test_tokens_are_replaced_once_and_values_are_not_scanned(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    filled = _fill(conn, "a {x} b {y}{x} c", '{"x": "{y}", "y": "Y"}')
    assert filled == "a {y} b Y{y} c"


def test_braces_that_are_no_token_stay(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    text = "'{}' '{1,2}' {Upper} { x} {a-b} {"
    assert _fill(conn, text, '{"x": "no"}') == text


def test_a_token_without_a_value_raises(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    with pytest.raises(psycopg.errors.RaiseException, match=r"\{missing\} has no value"):
        _fill(conn, "ok {x} {missing}", '{"x": "1"}')


def test_a_selector_with_a_token_like_text_is_generated_as_written(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    # '{q}' is a token of the post template; pasted as a value it must stay a string literal
    conn.execute("SELECT mbus.create_queue('tpl_sel', 1)")
    conn.execute("SELECT mbus.create_consumer('tpl_sel', 'braces', $$(t.data->>'k') = '{q}'$$)")
    conn.execute("SELECT mbus.post('tpl_sel', '{\"k\": \"{q}\"}')")
    conn.execute("SELECT mbus.post('tpl_sel', '{\"k\": \"other\"}')")
    row = conn.execute("SELECT count(*) FROM mbus.consumen('tpl_sel', 'braces', 10)").fetchone()
    assert row == (1,)
    row = conn.execute("SELECT count(*) FROM mbus.consumen('tpl_sel', 'default', 10)").fetchone()
    assert row == (2,)
