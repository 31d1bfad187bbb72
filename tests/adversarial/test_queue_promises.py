"""Queue calls do what they say or raise: no post that reports success and stored nothing, no
dependency silently ignored, no priority silently dropped (real PostgreSQL, the SQL API)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from prometheus_client import generate_latest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from pgmbus.errors import InvalidArgument, translating
from pgmbus.http.metrics import fetch_snapshot, registry_for
from pgmbus.queues import AsyncBus, Bus, Message
from pgmbus.queues.reports import HandlerStats, Reporter
from pgmbus.workers import App, drain

Conn = psycopg.Connection[dict[str, Any]]


def scalar(conn: Conn, query: str, *args: Any) -> Any:
    row = conn.execute(query, args).fetchone()
    assert row is not None
    return next(iter(row.values()))


def stored(conn: Conn, queue: str = "jobs") -> int:
    return int(scalar(conn, f"SELECT count(*) FROM mbus.q_{queue}"))


@pytest.fixture
def qconn(shared_dsn: str) -> Iterator[Conn]:
    """A connection in a transaction rolled back after the test; queue ``jobs`` exists."""
    with psycopg.connect(shared_dsn, row_factory=dict_row) as connection:
        try:
            connection.execute("SELECT mbus.create_queue('jobs', 4)")
            yield connection
        finally:
            connection.rollback()


@pytest.fixture
def autodb(db_dsn: str) -> str:
    """A database of its own (committing tests) with queue ``jobs``."""
    with psycopg.connect(db_dsn, autocommit=True) as connection:
        connection.execute("SELECT mbus.create_queue('jobs', 4)")
    return db_dsn


def notices(conn: psycopg.Connection[Any]) -> list[str]:
    got: list[str] = []
    conn.add_notice_handler(lambda d: got.append(f"{d.sqlstate} {d.message_primary}"))
    return got


# -- a re-post of what the transaction consumed is stored; a producer's retry is not -----------


@pytest.mark.parametrize("own", [True, False], ids=["client-iid", "get-iid"])
def test_the_seed_retry_pattern_keeps_the_message_on_every_retry(qconn: Conn, own: bool) -> None:
    """Consume, then post it again with its iid and delayed_until in the same transaction (the
    seed's retry): the second retry was swallowed by the client-iid window and the message lost
    while the post returned its iid."""
    first = "mail-1" if own else None
    iid = scalar(qconn, "SELECT mbus.post_jobs('{\"try\": 0}', iid => %s)", first)
    for attempt in range(1, 4):
        qconn.execute("UPDATE mbus.q_jobs SET vt = now() - interval '1 second'")
        got = qconn.execute("SELECT iid FROM mbus.consume('jobs')").fetchall()
        assert got == [{"iid": iid}], attempt
        again = scalar(
            qconn,
            "SELECT mbus.post_jobs(%s, delayed_until => now() + interval '1 hour', iid => %s)",
            psycopg.types.json.Jsonb({"try": attempt}),
            iid,
        )
        assert again == iid
        assert stored(qconn) == 1, f"retry {attempt} stored nothing"
    assert scalar(qconn, "SELECT data FROM mbus.q_jobs") == {"try": 3}


def test_a_repost_through_consumen_and_take_is_stored(qconn: Conn) -> None:
    iid = scalar(qconn, "SELECT mbus.post_jobs('{}', iid => 'mail-2')")
    for claim in (
        "SELECT iid FROM mbus.consumen('jobs', 'default', 5)",
        "SELECT iid FROM mbus.take_jobs('mail-2')",
        "SELECT iid FROM mbus.take_from('jobs', 'default', 'mail-2')",
    ):
        assert qconn.execute(claim).fetchall() == [{"iid": iid}], claim
        assert scalar(qconn, "SELECT mbus.post_jobs('{}', iid => 'mail-2')") == iid
        assert stored(qconn) == 1, claim


def test_a_producer_retry_stores_nothing_and_says_so(autodb: str) -> None:
    """The retry after an ambiguous commit stores nothing, also once consumed elsewhere, and
    tells the caller with a notice (01M01) instead of a silent success."""
    with (
        psycopg.connect(autodb, row_factory=dict_row, autocommit=True) as producer,
        psycopg.connect(autodb, row_factory=dict_row, autocommit=True) as consumer,
    ):
        said = notices(producer)
        iid = scalar(producer, "SELECT mbus.post_jobs('{}', iid => 'order-1')")
        assert said == []
        assert scalar(producer, "SELECT mbus.post_jobs('{}', iid => 'order-1')") == iid
        assert len(said) == 1 and said[0].startswith("01M01 ") and "order-1" in said[0]
        assert consumer.execute("SELECT iid FROM mbus.consume('jobs')").fetchall() == [{"iid": iid}]
        # consumed in another transaction: a retry, not a re-post
        assert scalar(producer, "SELECT mbus.post_jobs('{}', iid => 'order-1')") == iid
        assert len(said) == 2
        assert stored(producer) == 0
        # the consumer's own re-post in its consuming transaction is stored
        assert scalar(producer, "SELECT mbus.post_jobs('{\"n\": 2}', iid => 'order-2')")
        with consumer.transaction():
            consumer.execute("SELECT * FROM mbus.consume('jobs')")
            consumer.execute("SELECT mbus.post_jobs('{\"n\": 3}', iid => 'order-2')")
        assert stored(producer) == 1
        # and a producer retry of it after that commit still stores nothing
        assert scalar(producer, "SELECT mbus.post_jobs('{}', iid => 'order-2')") == "order-2"
        assert scalar(producer, "SELECT data FROM mbus.q_jobs") == {"n": 3}


def test_a_repost_while_another_consumer_holds_its_delivery_raises(qconn: Conn) -> None:
    """With two consumers, one's re-post would give the other a second delivery; refused with
    MB006 rather than swallowed."""
    qconn.execute("SELECT mbus.create_consumer('jobs', 'audit')")
    iid = scalar(qconn, "SELECT mbus.post_jobs('{}', iid => 'two-1')")
    assert qconn.execute("SELECT iid FROM mbus.consume('jobs', 'default')").fetchall() == [
        {"iid": iid}
    ]
    with pytest.raises(InvalidArgument, match="still pending"), translating(), qconn.transaction():
        qconn.execute("SELECT mbus.post_jobs('{}', iid => 'two-1')")
    assert stored(qconn) == 1


# -- consume_after naming a message of another database --------------------------------------


def test_consume_after_a_received_message_pending_here_waits(qconn: Conn) -> None:
    """A message received from another database keeps its iid '<q>.<n>@<db>'; a dependency on it
    was ignored although it was pending in the queue the route delivered it to."""
    qconn.execute("SELECT mbus.create_queue('inbox', 1)")
    got = scalar(
        qconn,
        "SELECT mbus.exchange_receive('inbox', %s)",
        psycopg.types.json.Jsonb(
            [
                {
                    "iid": "orders.7@elsewhere",
                    "data": {"n": 7},
                    "headers": {"seenby": ["elsewhere"], "source_db": "elsewhere"},
                }
            ]
        ),
    )
    assert got["accepted"] == 1
    after = scalar(qconn, "SELECT mbus.post_jobs('{}', consume_after => 'orders.7@elsewhere')")
    assert qconn.execute("SELECT * FROM mbus.consume('jobs')").fetchall() == []
    assert [r["iid"] for r in qconn.execute("SELECT iid FROM mbus.consume('inbox')")] == [
        "orders.7@elsewhere"
    ]
    qconn.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the release runs at commit otherwise
    assert [r["iid"] for r in qconn.execute("SELECT iid FROM mbus.consume('jobs')")] == [after]


def test_consume_after_a_foreign_message_not_here_is_refused(qconn: Conn) -> None:
    with (
        pytest.raises(InvalidArgument, match="another database"),
        translating(),
        qconn.transaction(),
    ):
        qconn.execute("SELECT mbus.post_jobs('{}', consume_after => 'orders.9@elsewhere')")
    assert stored(qconn) == 0


def test_consume_after_a_foreign_message_consumed_here_is_satisfied(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.create_queue('inbox', 1)")
    qconn.execute(
        "SELECT mbus.exchange_receive('inbox', %s)",
        (psycopg.types.json.Jsonb([{"iid": "orders.8@elsewhere", "data": {}}]),),
    )
    qconn.execute("SELECT * FROM mbus.consume('inbox')")
    after = scalar(qconn, "SELECT mbus.post_jobs('{}', consume_after => 'orders.8@elsewhere')")
    assert [r["iid"] for r in qconn.execute("SELECT iid FROM mbus.consume('jobs')")] == [after]


def test_a_received_message_keeps_its_dependencies_on_its_source(qconn: Conn) -> None:
    """The exchange forwards a message once its dependencies are gone at the source: at the
    destination, dependencies on the source's messages that never came are satisfied."""
    qconn.execute("SELECT mbus.create_queue('inbox', 1)")
    got = scalar(
        qconn,
        "SELECT mbus.exchange_receive('inbox', %s)",
        psycopg.types.json.Jsonb(
            [
                {
                    "iid": "orders.10@elsewhere",
                    "data": {},
                    "headers": {"source_db": "elsewhere", "consume_after": ["orders.9@elsewhere"]},
                }
            ]
        ),
    )
    assert got["accepted"] == 1
    assert [r["iid"] for r in qconn.execute("SELECT iid FROM mbus.consume('inbox')")] == [
        "orders.10@elsewhere"
    ]


# -- priority kept through the dead-message queue --------------------------------------------


def test_to_dmq_keeps_the_priority_and_replay_posts_it_back(qconn: Conn) -> None:
    iid = scalar(qconn, "SELECT mbus.post_jobs('{}', priority => 7)")
    dmq_id = scalar(
        qconn, "SELECT mbus.to_dmq(m, 'jobs', 'bad', 'default') FROM mbus.consume('jobs') AS m"
    )
    assert scalar(qconn, "SELECT priority FROM mbus.dmq WHERE dmq_id = %s", dmq_id) == 7
    assert scalar(qconn, "SELECT mbus.dmq_replay(%s)", dmq_id) == iid
    assert scalar(qconn, "SELECT priority FROM mbus.q_jobs") == 7


def test_to_dmq_takes_an_explicit_priority_and_refuses_one_out_of_range(qconn: Conn) -> None:
    scalar(qconn, "SELECT mbus.post_jobs('{}')")
    msg = "(SELECT m FROM mbus.consume('jobs') AS m)"
    dmq_id = scalar(qconn, f"SELECT mbus.to_dmq({msg}, 'jobs', 'bad', priority => 3)")
    assert scalar(qconn, "SELECT priority FROM mbus.dmq WHERE dmq_id = %s", dmq_id) == 3
    scalar(qconn, "SELECT mbus.post_jobs('{}')")
    dead = scalar(qconn, "SELECT count(*) FROM mbus.dmq")
    with pytest.raises(InvalidArgument, match=r"0\.\.32767"), translating(), qconn.transaction():
        qconn.execute(
            "SELECT mbus.to_dmq(m, 'jobs', 'bad', priority => 40000) FROM mbus.consume('jobs') AS m"
        )
    assert scalar(qconn, "SELECT count(*) FROM mbus.dmq") == dead


# -- a delivery that never reported is not a handler failure ---------------------------------


def lease_at(conn: Conn, now: Any, max_attempts: int = 1) -> list[dict[str, Any]]:
    return conn.execute(
        "SELECT * FROM mbus.lease_jobs_by_default(1, interval '10 seconds', %s, %s)",
        (max_attempts, now),
    ).fetchall()


def test_an_unreported_last_delivery_is_buried_as_such_and_counted_apart(qconn: Conn) -> None:
    """The worker finished the message but its ack was lost while the database was down: the
    next lease buried it as "max_attempts exceeded", like a handler that failed every time."""
    now = scalar(qconn, "SELECT now() + interval '1 hour'")
    sec = scalar(qconn, "SELECT interval '1 second'")
    scalar(qconn, 'SELECT mbus.post_jobs(\'{"ack": "lost"}\')')
    scalar(qconn, 'SELECT mbus.post_jobs(\'{"handler": "failed"}\')')
    (lost,) = lease_at(qconn, now)
    (failed,) = lease_at(qconn, now)
    # the second one's handler failed and said so (nack); the first's ack never arrived
    qconn.execute("SELECT mbus.nack_jobs(%s, '0', %s)", (failed["lease_token"], now))
    # both at max_attempts: each lease call buries what it claims (one apiece)
    assert lease_at(qconn, now + 100 * sec) == []
    assert lease_at(qconn, now + 100 * sec) == []
    dead = {
        r["data"]["ack" if "ack" in r["data"] else "handler"]: r
        for r in qconn.execute(
            "SELECT data, reason, unreported, attempts FROM mbus.dmq WHERE qname = 'jobs'"
        )
    }
    assert dead["lost"]["unreported"] is True
    assert "never reported" in dead["lost"]["reason"]
    assert dead["failed"]["unreported"] is False
    assert dead["failed"]["reason"] == "max_attempts (1) exceeded"
    assert lost["iid"] != failed["iid"]
    stats = qconn.execute("SELECT dmq, dmq_unreported FROM mbus.queue_stats('jobs')").fetchone()
    assert stats == {"dmq": 2, "dmq_unreported": 1}
    assert scalar(qconn, "SELECT dmq_unreported FROM mbus.queue_metrics WHERE qname = 'jobs'") == 1


# -- the same through the Python clients (sync Bus and AsyncBus) -------------------------------


def test_the_seed_retry_through_the_sync_bus(autodb: str) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    with Bus(autodb) as bus, psycopg.connect(autodb) as conn:
        said = notices(conn)
        iid = bus.post("jobs", {"try": 0}, iid="mail-9")
        for attempt in range(1, 4):
            conn.execute("UPDATE mbus.q_jobs SET vt = now() - interval '1 second'")
            conn.commit()
            with conn.transaction():
                (m,) = bus.consume("jobs", conn=conn)
                assert m.iid == iid
                got = bus.post("jobs", {"try": attempt}, delayed_until=later, iid=iid, conn=conn)
                assert got == iid
            assert [s.depth for s in bus.stats("jobs")] == [1], attempt
        assert said == []
        # a producer's retry on the caller's connection: nothing stored, and the notice says so
        assert bus.post("jobs", {"try": 9}, iid=iid, conn=conn) == iid
        conn.commit()
        assert len(said) == 1 and said[0].startswith("01M01 ")
        assert bus.peek("jobs", iid)
        assert [s.depth for s in bus.stats("jobs")] == [1]


def test_the_seed_retry_through_the_async_bus(autodb: str) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)

    async def scenario() -> list[int]:
        depths = []
        async with AsyncBus(autodb) as bus, await psycopg.AsyncConnection.connect(autodb) as conn:
            iid = await bus.post("jobs", {"try": 0}, iid="mail-10")
            for attempt in range(1, 4):
                await conn.execute("UPDATE mbus.q_jobs SET vt = now() - interval '1 second'")
                await conn.commit()
                async with conn.transaction():
                    (m,) = await bus.consume("jobs", conn=conn)
                    assert m.iid == iid
                    again = await bus.post(
                        "jobs", {"try": attempt}, delayed_until=later, iid=iid, conn=conn
                    )
                    assert again == iid
                depths += [s.depth for s in await bus.stats("jobs")]
        return depths

    assert asyncio.run(scenario()) == [1, 1, 1]


def test_the_clients_tell_unreported_dead_messages_apart(autodb: str) -> None:
    with Bus(autodb) as bus, psycopg.connect(autodb, autocommit=True) as conn:
        bus.post("jobs", {"ack": "lost"})
        (m,) = bus.lease("jobs", lease=0.2, max_attempts=1)
        # the ack never comes; once the lease has ended the next lease buries it
        conn.execute("UPDATE mbus.q_jobs SET vt = now() - interval '1 second'")
        assert bus.lease("jobs", lease=0.2, max_attempts=1) == []
        (dead,) = bus.dmq("jobs")
        assert dead.iid == m.iid and dead.unreported and "never reported" in dead.reason
        (stats,) = bus.stats("jobs")
        assert (stats.dmq, stats.dmq_unreported) == (1, 1)

    async def through_async() -> tuple[bool, int]:
        async with AsyncBus(autodb) as abus:
            (d,) = await abus.dmq("jobs")
            (s,) = await abus.stats("jobs")
            return d.unreported, s.dmq_unreported

    assert asyncio.run(through_async()) == (True, 1)


def test_a_worker_whose_sessions_drop_after_the_handler_still_acks_it(autodb: str) -> None:
    """The handler succeeds, then the database drops every session of the worker: the ack,
    batched after the handler returned, reaches the database on a new connection while the
    lease holds. Done once, nothing buried (before, it was counted lost and, at
    max_attempts, buried as if the handler had failed)."""
    app = App(autodb)
    handled: list[str] = []

    @app.handler("jobs", max_attempts=1, lease=30)
    async def job(message: Message) -> None:
        handled.append(message.iid)
        async with await psycopg.AsyncConnection.connect(autodb, autocommit=True) as admin:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )

    with Bus(autodb) as bus:
        iid = bus.post("jobs", {"n": 1})
    (stats,) = drain(app).queues.values()
    assert handled == [iid]
    assert (stats.done, stats.lost, stats.unreported) == (1, 0, 0)
    with Bus(autodb) as bus:
        assert bus.dmq("jobs") == []
        assert bus.peek("jobs", iid) is False


def test_an_ack_that_cannot_reach_the_database_counts_unreported(autodb: str) -> None:
    """The database refuses every connection when the worker flushes its acks: the message
    is counted unreported (not lost, not done), and the lease at max_attempts that finds it
    later buries it saying its last delivery never reported."""
    with Bus(autodb) as bus:
        iid = bus.post("jobs", {"n": 1})
    stats = asyncio.run(_flush_while_closed(autodb))
    assert (stats.done, stats.lost, stats.unreported) == (0, 0, 1)
    assert stats.summary().endswith("1 unreported")
    with psycopg.connect(autodb, autocommit=True) as conn:
        conn.execute("UPDATE mbus.q_jobs SET vt = now() - interval '1 second'")
        conn.execute("SELECT * FROM mbus.lease_jobs_by_default(1, '10 seconds', 1)")
    with Bus(autodb) as bus:
        (dead,) = bus.dmq("jobs")
        assert dead.iid == iid and dead.unreported and "never reported" in dead.reason


async def _flush_while_closed(dsn: str) -> HandlerStats:
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        dsn, min_size=1, max_size=1, timeout=2, open=False, kwargs={"autocommit": True}
    )
    await pool.open(wait=True)
    other = make_conninfo(dsn, dbname="postgres")
    name = str(conninfo_to_dict(dsn)["dbname"])
    try:
        bus = AsyncBus(pool=pool)
        [message] = await bus.lease("jobs", limit=1, lease=30)
        with psycopg.connect(other, autocommit=True) as admin:
            admin.execute(
                sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(sql.Identifier(name))
            )
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
        stats = HandlerStats()
        reporter = Reporter(bus, stats, logging.getLogger("test"), "job")
        reporter.pending = [message]
        await reporter.flush()
        return stats
    finally:
        with psycopg.connect(other, autocommit=True) as admin:
            admin.execute(
                sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(sql.Identifier(name))
            )
        await pool.close()


def test_metrics_export_unreported_dead_messages_apart(autodb: str) -> None:
    with psycopg.connect(autodb, autocommit=True) as conn:
        conn.execute("SELECT mbus.post_jobs('{}')")
        conn.execute("SELECT * FROM mbus.lease_jobs_by_default(1, '10 seconds', 1)")
        conn.execute("UPDATE mbus.q_jobs SET vt = now() - interval '1 second'")
        conn.execute("SELECT * FROM mbus.lease_jobs_by_default(1, '10 seconds', 1)")
        with psycopg.connect(autodb) as reader:
            snap = fetch_snapshot(reader, late_after_s=60, window_s=60)
    text = generate_latest(registry_for(lambda _after: snap)).decode()
    assert 'pgmbus_queue_consumer_dead_unreported{consumer="default",queue="jobs"} 1.0' in text
    assert 'pgmbus_queue_consumer_dead_messages{consumer="default",queue="jobs"} 1.0' in text
