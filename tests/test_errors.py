"""SQLSTATEs raised by the SQL API become typed exceptions that keep the server's message."""

from __future__ import annotations

import psycopg
import pytest

from pgmbus import errors


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Upper", "invalid queue name 'Upper'"),
        ("with-dash", "invalid queue name 'with-dash'"),
        ("q'uote", "invalid queue name"),
        ("9starts_with_digit", "invalid queue name"),
        ("", "queue name must not be empty"),
        ("a" * 40, r"too long \(40 bytes, at most 32\)"),
    ],
)
def test_invalid_names_raise_invalid_name(
    conn: psycopg.Connection[tuple[object, ...]], name: str, message: str
) -> None:
    with pytest.raises(errors.InvalidName, match=message) as caught, errors.translating():
        conn.execute("SELECT mbus.check_name('queue', %s)", [name])
    assert caught.value.sqlstate_raised == "MB001"
    assert isinstance(caught.value.__cause__, psycopg.Error)
    conn.rollback()


def test_valid_name_passes(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    row = conn.execute("SELECT mbus.check_name('queue', 'orders_2')").fetchone()
    assert row == ("orders_2",)


def test_standard_sqlstates_map_to_classes(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    with pytest.raises(errors.NotFound), errors.translating():
        conn.execute("SELECT mbus.no_such_function()")
    conn.rollback()


def test_unknown_sqlstate_falls_back_to_database_error(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    with pytest.raises(errors.DatabaseError) as caught, errors.translating():
        conn.execute("SELECT 1/0")
    assert type(caught.value) is errors.DatabaseError
    assert caught.value.sqlstate_raised == "22012"
    assert "division by zero" in str(caught.value)
    conn.rollback()


def test_hint_is_kept_in_the_message(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    with pytest.raises(errors.InvalidName, match="HINT: use lower-case"), errors.translating():
        conn.execute("SELECT mbus.check_name('consumer', 'X')")
    conn.rollback()


def test_every_mb_class_has_a_distinct_sqlstate() -> None:
    classes = [
        c for c in vars(errors).values() if isinstance(c, type) and c.__dict__.get("sqlstate")
    ]
    states = [c.sqlstate for c in classes]
    assert len(states) == len(set(states))
    for cls in classes:
        assert errors.error_class_for(cls.sqlstate) is cls


def test_non_database_errors_pass_through() -> None:
    with pytest.raises(ValueError, match="plain"), errors.translating():
        raise ValueError("plain")
