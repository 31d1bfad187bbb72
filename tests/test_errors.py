"""SQLSTATEs raised by the SQL API become typed exceptions that keep the server's message."""

from __future__ import annotations

import asyncio

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
    assert caught.value.sqlstate == "MB001"
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
    assert caught.value.sqlstate == "22012"
    assert "division by zero" in str(caught.value)
    conn.rollback()


def test_an_integer_beyond_bigint_is_an_invalid_argument_not_a_missing_function(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    # psycopg sends 2**70 as numeric, so PostgreSQL reports mbus.dmq_replay(numeric, ...) missing
    out_of_range = pytest.raises(errors.InvalidArgument, match="a number is out of range")
    with out_of_range as caught, errors.translating():
        conn.execute("SELECT mbus.dmq_replay(%s, NULL)", [2**70])
    assert caught.value.sqlstate == "22003"
    conn.rollback()
    with pytest.raises(errors.InvalidArgument, match="out of range"), errors.translating():
        conn.execute("SELECT mbus.dmq_replay(%s::bigint, NULL)", [2**70])
    conn.rollback()
    # a missing function called with an ordinary number is still NotFound
    with pytest.raises(errors.NotFound), errors.translating():
        conn.execute("SELECT mbus.no_such_function(%s)", [7])
    conn.rollback()


def test_hint_is_kept_in_the_message(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    with pytest.raises(errors.InvalidName, match="HINT: use lower-case"), errors.translating():
        conn.execute("SELECT mbus.check_name('consumer', 'X')")
    conn.rollback()


def test_every_mb_class_has_a_distinct_default_sqlstate() -> None:
    classes = [
        c
        for c in vars(errors).values()
        if isinstance(c, type)
        and issubclass(c, errors.PgmbusError)
        and c.__dict__.get("default_sqlstate")
    ]
    states = [c.default_sqlstate for c in classes]
    assert len(states) == len(set(states))
    for cls in classes:
        assert errors.error_class_for(cls.default_sqlstate) is cls


def test_sqlstate_is_the_one_the_server_raised_not_the_class_default(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    # 22023 (invalid_parameter_value) maps to InvalidArgument, whose own code is MB006
    with pytest.raises(errors.InvalidArgument) as caught, errors.translating():
        conn.execute(
            "DO $$ BEGIN RAISE EXCEPTION 'bad value' USING ERRCODE = 'invalid_parameter_value';"
            " END $$"
        )
    assert caught.value.sqlstate == "22023"
    assert errors.InvalidArgument.default_sqlstate == "MB006"
    assert caught.value.message == "bad value"
    conn.rollback()
    # a name that does not resolve: 42883 (undefined_function) gives NotFound (MB002)
    with pytest.raises(errors.NotFound) as missing, errors.translating():
        conn.execute("SELECT mbus.no_such_function()")
    assert missing.value.sqlstate == "42883"
    assert errors.NotFound.default_sqlstate == "MB002"
    conn.rollback()


def test_client_side_errors_carry_the_class_code_unless_given_one() -> None:
    assert errors.InvalidPayload("not an object").sqlstate == "MB005"
    assert errors.InvalidPayload("not an object", sqlstate="22P02").sqlstate == "22P02"
    assert errors.TimeoutExpired("waited").sqlstate is None


def test_non_database_errors_pass_through() -> None:
    with pytest.raises(ValueError, match="plain"), errors.translating():
        raise ValueError("plain")


def test_translating_works_in_async_with_too(shared_dsn: str) -> None:
    async def body() -> None:
        aconn = await psycopg.AsyncConnection.connect(shared_dsn)
        try:
            async with errors.translating(), aconn.cursor() as cur:
                await cur.execute("SELECT mbus.check_name('queue', 'Bad')")
        finally:
            await aconn.close()

    with pytest.raises(errors.InvalidName) as caught:
        asyncio.run(body())
    assert caught.value.sqlstate == "MB001"
    assert isinstance(caught.value.__cause__, psycopg.Error)
