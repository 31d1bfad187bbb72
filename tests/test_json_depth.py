"""The Python side of the 100-level rule agrees with the database's ``mbus.json_too_deep``."""

from __future__ import annotations

import json

import psycopg
import pytest

from pgmbus.json_depth import MAX_DEPTH, deeper_than, text_deeper_than


def _nested(depth: int, key: str = "a") -> str:
    """JSON text of objects nested ``depth`` levels, with brackets inside a string too."""
    return '{"%s": ' % key * depth + '"[[[{{{"' + "}" * depth  # noqa: UP031


@pytest.mark.parametrize("depth", [1, 99, 100, 101, 150, 3000])
def test_text_agrees_with_the_database(shared_dsn: str, depth: int) -> None:
    text = _nested(depth)
    with psycopg.connect(shared_dsn) as conn:
        row = conn.execute("SELECT mbus.json_too_deep(%s::jsonb)", (text,)).fetchone()
    assert row == (depth > MAX_DEPTH,)
    assert text_deeper_than(text) is (depth > MAX_DEPTH)
    if depth < 900:  # Python's json stops near 1,000 levels
        assert deeper_than(json.loads(text)) is (depth > MAX_DEPTH)


def test_brackets_inside_strings_and_escapes_are_not_structure() -> None:
    inside = json.dumps({"s": "[" * 500 + '\\"{' * 300, "t": ["]" * 50]})
    assert not text_deeper_than(inside)
    arrays = "[" * 101 + "]" * 101
    assert text_deeper_than(arrays) and not text_deeper_than("[" * 100 + "]" * 100)
