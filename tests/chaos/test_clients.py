"""Clients recover by themselves: Bus.listen, a Bus's pool and `pgmbus serve` after cuts."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
import uvicorn
from psycopg.conninfo import conninfo_to_dict

from pgmbus.http import ServiceConfig, create_app
from pgmbus.queues import Bus
from pgmbus.testing.chaos import ChaosProxy


@pytest.fixture
def proxy(db_dsn: str) -> Iterator[ChaosProxy]:
    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute("SELECT mbus.create_queue('jobs', 1)")
    with ChaosProxy(int(conninfo_to_dict(db_dsn)["port"] or 5432)) as p:
        yield p


@pytest.mark.timeout(60)
def test_listen_goes_on_after_its_connections_are_cut(proxy: ChaosProxy, db_dsn: str) -> None:
    seen: list[int] = []
    stop = threading.Event()

    def consume() -> None:
        with Bus(proxy.dsn(db_dsn), poll_interval=0.2) as bus:
            for message in bus.listen("jobs", lease=2.0):
                seen.append(int(message.data["n"]))
                if stop.is_set():
                    return

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    with Bus(db_dsn) as producer:
        for n in range(30):
            producer.post("jobs", {"n": n})
            if n % 10 == 5:
                time.sleep(0.3)
                proxy.cut_all()
        deadline = time.monotonic() + 30
        while set(range(30)) - set(seen) and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        producer.post("jobs", {"n": 99})  # wakes the loop so that it sees stop
    thread.join(10)
    assert set(range(30)) <= set(seen), "every message arrived despite the cuts"
    assert not thread.is_alive()
    assert proxy.stats.cut_all >= 2


def test_a_cut_costs_one_call_not_one_per_pooled_connection(proxy: ChaosProxy, db_dsn: str) -> None:
    with Bus(proxy.dsn(db_dsn), max_size=4) as bus:
        with bus.pool.connection(), bus.pool.connection(), bus.pool.connection():
            pass  # three idle connections in the pool
        bus.post("jobs", {"n": 1})
        proxy.cut_all()
        with pytest.raises(psycopg.OperationalError):
            bus.post("jobs", {"n": 2})
        bus.post("jobs", {"n": 3})  # the broken idle connections were dropped
        assert bus.peek("jobs")


@pytest.mark.timeout(60)
def test_serve_answers_503_while_the_database_is_cut_and_recovers(
    proxy: ChaosProxy, db_dsn: str
) -> None:
    """A cut database connection is a 503 with Retry-After (the client retries a post with
    its iid), not an opaque 500; the next request works without a restart."""
    with psycopg.connect(db_dsn, autocommit=True) as c:
        row = c.execute("SELECT api_key FROM mbus.timer_add_client('chaos_503')").fetchone()
        c.execute("SELECT mbus.api_set_scopes('chaos_503', ARRAY['queues:write:*'])")
    assert row is not None
    config = ServiceConfig(dsn=proxy.dsn(db_dsn), run_dispatcher=False)
    server = uvicorn.Server(
        uvicorn.Config(create_app(config), host="127.0.0.1", port=0, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    headers = {"authorization": f"Bearer {row[0]}"}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as http:

            def post(n: int) -> httpx.Response:
                return http.post("/v1/queues/jobs/messages", json={"data": {"n": n}})

            assert post(1).status_code == 201
            proxy.cut_all()
            answers = [post(n) for n in (2, 3)]
            assert answers[0].status_code == 503, answers[0].text
            assert answers[0].headers["retry-after"] == "1"
            assert answers[0].json()["error"] == "unavailable"
            assert answers[1].status_code == 201, "the service recovered by itself"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.mark.timeout(60)
def test_a_handler_outlives_lock_timeouts_while_claiming(db_dsn: str) -> None:
    """`pgmbus worker`'s queue loop retries a lock timeout (a typed LockNotAvailable, not a
    psycopg OperationalError) with backoff: it used to end the handler's slots for good."""
    from psycopg.conninfo import make_conninfo

    from pgmbus.handlers import App
    from pgmbus.queues import AsyncBus
    from pgmbus.queues.loop import QueueLoop

    with psycopg.connect(db_dsn, autocommit=True) as c:
        c.execute("SELECT mbus.create_queue('jobs', 1)")
    seen: list[int] = []
    app = App(db_dsn)

    @app.handler("jobs", poll_interval=0.1)
    def handle(message: Any) -> None:
        seen.append(int(message.data["n"]))

    async def main() -> QueueLoop:
        dsn = make_conninfo(db_dsn, options="-c lock_timeout=50")
        async with AsyncBus(dsn, max_size=3, poll_interval=0.1) as bus:
            loop = QueueLoop(bus, app.queue_handlers[0])
            stop, abort = asyncio.Event(), asyncio.Event()
            task = asyncio.ensure_future(loop.run(stop, abort))
            with psycopg.connect(db_dsn) as locker:
                locker.execute("LOCK TABLE mbus.q_jobs IN ACCESS EXCLUSIVE MODE")
                await asyncio.sleep(1.0)  # every claim meets the lock meanwhile
            await bus.post("jobs", {"n": 1})
            for _ in range(100):
                if seen or task.done():
                    break
                await asyncio.sleep(0.05)
            stop.set()
            await asyncio.wait_for(task, 10)  # raises if the slot died
            return loop

    loop = asyncio.run(main())
    assert seen == [1]
    assert loop.stats.reconnects >= 1, "the lock timeouts were met and retried"


@pytest.mark.timeout(60)
def test_a_dispatcher_started_while_the_database_is_unreachable_waits_for_it(
    proxy: ChaosProxy, db_dsn: str
) -> None:
    """The first heartbeat is retried with backoff: it used to end `Dispatcher.run` (and
    silently the dispatcher inside `pgmbus serve`) when the database was restarting."""
    from pgmbus.timers.dispatcher import Dispatcher, DispatcherConfig
    from pgmbus.timers.netguard import NetworkGuard, parse_networks

    config = DispatcherConfig(bucket_lease_s=2.0, claim_slack_s=1.0, name="chaos-first-beat")
    guard = NetworkGuard(parse_networks(["127.0.0.1/32"]))

    def registered() -> bool:
        with psycopg.connect(db_dsn) as c:
            row = c.execute(
                "SELECT count(*) FROM mbus.timer_dispatchers WHERE id = %s", (config.name,)
            ).fetchone()
        return bool(row and row[0])

    async def main() -> None:
        proxy.settings.refuse = True
        stop = asyncio.Event()
        task = asyncio.ensure_future(Dispatcher(proxy.dsn(db_dsn), config, guard).run(stop))
        await asyncio.sleep(1.0)
        assert not task.done(), task.exception() if task.done() else None
        assert not registered()
        proxy.settings.refuse = False
        for _ in range(100):
            if registered():
                break
            await asyncio.sleep(0.05)
        assert registered(), "the dispatcher started once the database answered"
        stop.set()
        await asyncio.wait_for(task, 20)

    asyncio.run(main())


def test_stream_reads_that_disable_scans_also_disable_jit(db_dsn: str) -> None:
    """A function run with enable_seqscan/enable_bitmapscan off must run with jit off: the
    disabled scans' cost lifts plans past jit_above_cost, and read_next on a slotted group was
    JIT-compiled on every call (240 ms on a new session), past the chaos suite's 300 ms
    statement timeout: a stream worker could not read again until the timeout was lifted."""
    with psycopg.connect(db_dsn) as c:
        rows = c.execute(
            "SELECT p.proname, p.proconfig FROM pg_proc AS p"
            " JOIN pg_namespace AS n ON n.oid = p.pronamespace"
            " WHERE n.nspname = 'mbus' AND p.proname IN ('read_next', 'read_between')"
        ).fetchall()
    assert len(rows) == 2
    for name, config in rows:
        assert "jit=off" in (config or []), (name, config)
