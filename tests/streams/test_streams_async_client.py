"""The async streams client (``pgmbus.streams.aclient``) on a real database, and its twin."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

import psycopg
import pytest

from pgmbus.errors import InvalidArgument, NotFound
from pgmbus.streams import aclient, client

T = TypeVar("T")
AConn = psycopg.AsyncConnection[Any]


def run(dsn: str, body: Callable[[AConn], Awaitable[T]], *, autocommit: bool = False) -> T:
    """Run ``body`` on a fresh async connection to ``dsn``."""

    async def main() -> T:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=autocommit) as conn:
            return await body(conn)

    return asyncio.run(main())


def test_the_blocking_client_has_the_async_clients_api() -> None:
    assert client.__all__ == aclient.__all__
    assert client.Event is aclient.Event and client.Batch is aclient.Batch
    for name in aclient.__all__:
        func = getattr(aclient, name)
        if inspect.iscoroutinefunction(func):
            twin = getattr(client, name)
            assert not inspect.iscoroutinefunction(twin), name
            assert inspect.signature(func).parameters.keys() == (
                inspect.signature(twin).parameters.keys()
            ), name


def test_publish_joins_the_transaction_and_read_commit_is_exactly_once(db_dsn: str) -> None:
    async def body(conn: AConn) -> None:
        await aclient.create_group(conn, "g", start="beginning")
        await conn.commit()
        first = await aclient.publish(conn, "t", {"n": 1}, key="k", headers={"h": "v"})
        ids = await aclient.publish_batch(conn, "t", [{"n": 2}, {"n": 3}], keys=["a", None])
        await conn.commit()
        assert ids == sorted(ids) and first < ids[0]
        batch = await aclient.read_next(conn, "g")
        assert [e.payload for e in batch.events] == [{"n": 1}, {"n": 2}, {"n": 3}]
        assert batch.events[0].key == "k" and batch.events[0].headers == {"h": "v"}
        assert batch.cursor is not None
        await aclient.commit(conn, "g", batch.cursor)
        await conn.commit()
        assert await aclient.group_cursor(conn, "g") == batch.cursor
        assert not await aclient.read_next(conn, "g")  # committed: not read again

    run(db_dsn, body)


def test_rolled_back_publish_is_never_read(db_dsn: str) -> None:
    async def body(conn: AConn) -> list[Any]:
        await aclient.create_group(conn, "g", start="beginning")
        await conn.commit()
        with pytest.raises(RuntimeError):
            async with conn.transaction():
                await aclient.publish(conn, "t", {"gone": True})
                raise RuntimeError("abort")
        await aclient.publish(conn, "t", {"kept": True})
        # read and acknowledge in one round trip, committing the transaction
        await conn.commit()
        batch = await aclient.read_next(conn, "g")
        assert batch.cursor is not None
        await aclient.commit_transaction(conn, "g", batch.cursor)
        assert not await aclient.read_next(conn, "g")
        return [e.payload for e in batch.events]

    assert run(db_dsn, body) == [{"kept": True}]


def test_many_copy_between_and_counters(db_dsn: str) -> None:
    async def body(conn: AConn) -> None:
        before = await aclient.current_cursor(conn)
        ids = await aclient.publish_many(conn, [("a", None, {"i": i}, None) for i in range(5)])
        rows = (("b", "k", {"j": j}, {"src": "copy"}) for j in range(3))
        n = await aclient.publish_copy(conn, rows)
        assert len(ids) == 5 and ids == sorted(ids) and n == 3
        await conn.commit()
        after = await aclient.current_cursor(conn)
        events = await aclient.read_between(conn, before, after)
        assert [e.topic for e in events] == ["a"] * 5 + ["b"] * 3
        only_b = await aclient.read_between(conn, before, after, topics=["b"])
        assert [e.payload for e in only_b] == [{"j": 0}, {"j": 1}, {"j": 2}]
        assert isinstance(await aclient.counters(conn), dict)

    run(db_dsn, body, autocommit=True)


def test_retries_dead_letters_and_status_rows(db_dsn: str) -> None:
    async def body(conn: AConn) -> None:
        await aclient.create_group(conn, "g", start="beginning")
        await aclient.configure_group(conn, "g", max_attempts=1, retry_backoff=timedelta(0))
        eid = await aclient.publish(conn, "t", {"bad": True})
        batch = await aclient.read_next(conn, "g")
        assert [e.id for e in batch.events] == [eid] and batch.cursor
        assert await aclient.retry_event(conn, "g", eid, error="boom") == "dead"
        await aclient.commit(conn, "g", batch.cursor)
        dead = await aclient.dmq(conn, "g")
        assert [(d["event_id"], d["last_error"]) for d in dead] == [(eid, "boom")]
        await aclient.dmq_replay(conn, "g", eid)
        back = await aclient.read_retries(conn, "g")
        assert [r.id for r in back] == [eid] and back[0].attempts == 0
        await aclient.ack_retry(conn, "g", eid)
        status = await aclient.group_status(conn)
        assert [(row["group_name"], row["dead_letters"]) for row in status] == [("g", 0)]

    run(db_dsn, body, autocommit=True)


def test_errors_are_typed(db_dsn: str) -> None:
    async def body(conn: AConn) -> None:
        with pytest.raises(NotFound):
            await aclient.ack_retry(conn, "no_such_group", 1)
        with pytest.raises(InvalidArgument):
            await aclient.publish(conn, "", {"a": 1})
        with pytest.raises(InvalidArgument):
            await aclient.publish_batch(conn, "t", [{"a": 1}, {"a": 2}], keys=["only one"])

    run(db_dsn, body, autocommit=True)
