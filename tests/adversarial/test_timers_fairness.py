"""One timers client never holds back another.

A client with a large backlog of due callbacks to a host that hangs must not delay another
client's due callbacks: claims give each client a fair share of a batch, and the dispatcher
bounds the calls in flight per client and per target host. Real PostgreSQL, real HTTP servers
on 127.0.0.1, the real dispatcher.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import psycopg
import pytest

from pgmbus.timers.delivery import Claimed
from pgmbus.timers.dispatcher import DispatcherConfig
from pgmbus.timers.lanes import Lanes
from tests.processes import reap
from tests.timers.conftest import Env, Reply, ScriptedServer
from tests.timers.test_timers_dispatcher import dispatch_until, fast_config

Server = Callable[..., ScriptedServer]
BUCKETS = list(range(64))
# longer than the tests run: the hanging server counts no call the dispatcher gave up on
TIMEOUT_S = 10.0


@pytest.fixture
def env(db_dsn: str) -> Env:
    """A fresh database with the timers client ``acme``."""
    e = Env(db_dsn)
    e.client = e.add_client("acme")
    return e


@pytest.fixture
def http_server() -> Iterator[Server]:
    """Factory of scripted HTTP servers on 127.0.0.1, shut down after the test."""
    servers: list[ScriptedServer] = []

    def factory(script: list[Reply] | None = None, default: Reply | None = None) -> ScriptedServer:
        servers.append(ScriptedServer(script, default))
        return servers[-1]

    yield factory
    for server in servers:
        server.close()


class Hanging:
    """Servers that hold every call until released: the test's condition met, they answer at
    once, so the dispatcher's stop need not wait out the calls it holds."""

    def __init__(self, http_server: Server) -> None:
        self.release = threading.Event()
        self.factory = http_server

    def server(self) -> ScriptedServer:
        return self.factory(default=Reply(action=self._hold))

    def _hold(self) -> None:
        self.release.wait(60.0)

    def until(self, done: Callable[[], bool]) -> Callable[[], bool]:
        """``done``, releasing the held calls once it is true."""

        def check() -> bool:
            if done():
                self.release.set()
                return True
            return False

        return check


def add_due(env: Env, client_id: int, prefix: str, count: int, url: str, ago_s: float) -> None:
    """``count`` callbacks of a client, all due ``ago_s`` seconds ago, in one statement."""
    env.sql(
        "SELECT count(*) FROM mbus.timer_create_many((SELECT jsonb_agg(jsonb_build_object("
        " 'client_id', %s::bigint, 'group_key', 'g', 'event_key', %s::text || i,"
        " 'run_at', now() - make_interval(secs => %s::float8 - i * 1e-3), 'url', %s::text,"
        " 'retry', jsonb_build_object('fast_retries', 0)))"
        " FROM generate_series(1, %s::integer) AS i))",
        (client_id, prefix, ago_s, url, count),
    )


def test_a_claim_gives_each_client_its_share_of_the_batch(env: Env) -> None:
    busy = env.client
    quiet = env.add_client("quiet")
    add_due(env, busy.id, "a", 1000, "http://127.0.0.1:9/a", ago_s=60)
    add_due(env, quiet.id, "b", 5, "http://127.0.0.1:9/b", ago_s=1)  # due after all of busy's
    with psycopg.connect(env.dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT client_id FROM mbus.timer_claim('d', %s, 100, 30)", (BUCKETS,)
        ).fetchall()
        got = [r[0] for r in rows]
        # two clients with claimable callbacks: half the batch each (a share one cannot fill
        # is not handed to the other), though all of busy's are due before quiet's
        assert got.count(quiet.id) == 5 and got.count(busy.id) == 50
        # a skipped client gets nothing; the batch is the others' alone
        rows = conn.execute(
            "SELECT client_id FROM mbus.timer_claim('d', %s, 100, 30, p_skip_clients => %s)",
            (BUCKETS, [busy.id]),
        ).fetchall()
        assert rows == []
        # alone, a client gets the whole batch: the next of its callbacks in (run_at, id) order
        rows = conn.execute(
            "SELECT client_id, event_key FROM mbus.timer_claim('d', %s, 100, 30)", (BUCKETS,)
        ).fetchall()
        assert [r[1] for r in rows] == [f"a{i}" for i in range(51, 151)]
    # every row locked was claimed, none twice
    held = env.sql(
        "SELECT count(*), sum(attempts) FROM mbus.timer_callbacks WHERE claimed_by = 'd'"
    )
    assert held[0] == (155, 155)


def test_a_hanging_clients_backlog_does_not_hold_back_another_client(
    env: Env, http_server: Server
) -> None:
    hold = Hanging(http_server)
    hanging = hold.server()  # never answers within the timeout (until the end)
    fast = http_server()
    busy = env.client
    quiet = env.add_client("quiet")
    add_due(env, busy.id, "a", 10_000, hanging.url + "/a", ago_s=30)
    add_due(env, quiet.id, "b", 20, fast.url + "/b", ago_s=1)  # due after all of busy's
    config: DispatcherConfig = fast_config(name="fair", concurrency=16, timeout_s=TIMEOUT_S)
    started = time.time()
    dispatch_until(env, hold.until(lambda: len(fast.received) >= 20), config, timeout=15.0)
    took = max(r.at for r in fast.received) - started  # (the stop waits for the hung calls)
    assert took < 8.0, f"the quiet client's 20 callbacks took {took:.1f}s"
    # the busy client held some workers, never all of them (its 8 to one host, half of 16)
    assert 1 <= hanging.max_inflight <= 8
    quiet_done: list[tuple[Any, ...]] = env.sql(
        "SELECT count(*) FROM mbus.timer_callbacks WHERE client_id = %s AND status = 'notified'",
        (quiet.id,),
    )
    assert quiet_done[0][0] == 20


def test_a_hanging_host_does_not_hold_back_the_same_clients_other_host(
    env: Env, http_server: Server
) -> None:
    hold = Hanging(http_server)
    hanging = hold.server()
    fast = http_server()
    add_due(env, env.client.id, "a", 2000, hanging.url + "/a", ago_s=30)
    add_due(env, env.client.id, "b", 20, fast.url + "/b", ago_s=1)
    config = fast_config(name="hosts", concurrency=16, timeout_s=TIMEOUT_S)
    started = time.time()
    dispatch_until(env, hold.until(lambda: len(fast.received) >= 20), config, timeout=15.0)
    took = max(r.at for r in fast.received) - started  # (the stop waits for the hung calls)
    assert took < 8.0, f"the other host's 20 callbacks took {took:.1f}s"
    assert 1 <= hanging.max_inflight <= 8  # half of the workers for one host


def test_the_dispatcher_command_takes_the_per_client_and_per_host_bounds(
    env: Env, http_server: Server
) -> None:
    hold = Hanging(http_server)
    hanging = hold.server()
    add_due(env, env.client.id, "a", 100, hanging.url + "/a", ago_s=5)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pgmbus",
            "dispatcher",
            "--dsn",
            env.dsn,
            "--allow-network",
            "127.0.0.1/32",
            "--concurrency",
            "16",
            "--timeout",
            "20",
            "--client-concurrency",
            "3",
            "--host-concurrency",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        hanging.wait_for(2, timeout=30.0)
        time.sleep(1.0)  # a third call would have come by now (16 workers, 100 due)
        assert len(hanging.received) == 2 and hanging.max_inflight == 2
    finally:
        hold.release.set()
        reap(proc)


def test_lanes_take_clients_in_turns_within_their_bounds() -> None:
    def cb(ident: int, client: int, url: str) -> Claimed:
        at = datetime.now(UTC)
        return Claimed(ident, 1, uuid4(), client, "g", f"e{ident}", at, at, url, {}, 0, "s", at)

    async def main() -> None:
        lanes = Lanes(per_client=2, per_host=1)
        for i in range(5):  # client 1: a backlog to one host, then one to another host
            lanes.put(cb(i, 1, "http://a.example:8080/x"))
        lanes.put(cb(5, 1, "http://b.example/x"))
        lanes.put(cb(6, 2, "http://c.example/x"))
        taken = [await lanes.get() for _ in range(3)]
        # client 1's first, client 2's, then client 1's other host (its first host is busy)
        assert [t.id for t in taken if t] == [0, 6, 5]
        # client 1 is at its bound (2), client 2 has nothing: nobody can start now
        assert lanes.runnable() == 0
        waiter = asyncio.ensure_future(lanes.get())
        await asyncio.sleep(0.01)
        assert not waiter.done()
        assert taken[0] is not None
        lanes.done(taken[0])  # a call to host a ends: a's next one starts
        assert (await asyncio.wait_for(waiter, 1.0)) is not None
        for t in taken[1:]:
            assert t is not None
            lanes.done(t)
        assert lanes.in_flight() == ({1: 1}, {"a.example:8080": 1})
        lanes.close()
        assert await lanes.get() is None
        assert sorted(c.id for c in lanes.drain()) == [2, 3, 4]

    asyncio.run(main())


def later_quiet_client(env: Env, http_server: Server, **config: Any) -> float:
    """Two clients whose hosts hang fill the dispatcher first; then a third client's 20
    callbacks come due: seconds until the last of them was called."""
    fast = http_server()
    hold = Hanging(http_server)
    hanging = [hold.server() for _ in range(2)]
    for n, server in enumerate(hanging):
        client = env.add_client(f"hangs{n}")
        add_due(env, client.id, "a", 1000, server.url + "/a", ago_s=30)
    quiet = env.add_client("quiet")
    cfg = fast_config(
        name="budget",
        concurrency=16,
        host_concurrency=4,
        max_prefetch=400,
        timeout_s=TIMEOUT_S,
        **config,
    )
    added: list[float] = []

    def quiet_called() -> bool:
        if not added and all(len(s.received) >= 4 for s in hanging):
            time.sleep(1.0)  # the hanging clients' claims fill what the dispatcher holds
            add_due(env, quiet.id, "b", 20, fast.url + "/b", ago_s=0)
            added.append(time.time())
        return len(fast.received) >= 20

    dispatch_until(env, hold.until(quiet_called), cfg, timeout=15.0)
    return max(r.at for r in fast.received) - added[0]


def test_clients_that_hang_together_cannot_take_all_a_dispatcher_holds(
    env: Env, http_server: Server
) -> None:
    took = later_quiet_client(env, http_server)
    assert took < 5.0, f"the quiet client's 20 callbacks took {took:.1f}s"


def test_hosts_that_hang_together_never_hold_the_slots_of_a_healthy_client(
    env: Env, http_server: Server
) -> None:
    """Two clients whose hosts both hang, at the default bounds (each host may hold half of
    the calls in flight), then a third client's callbacks come due one by one: each is called
    on time, though the hung calls never end within the test."""
    fast = http_server()
    hanging = [http_server(default=Reply(delay_s=30.0)) for _ in range(2)]
    for n, server in enumerate(hanging):
        client = env.add_client(f"hangs{n}")
        add_due(env, client.id, "a", 500, server.url + "/a", ago_s=30)
    healthy = env.add_client("healthy")
    cfg = fast_config(name="stalls", concurrency=16, timeout_s=TIMEOUT_S, claim_slack_s=5.0)
    added: list[float] = []

    def healthy_called() -> bool:
        if not added and all(len(s.received) >= 8 for s in hanging):
            # every host at its bound: a host's calls fill half of the 16 slots; due from now
            # over two seconds, the healthy client's callbacks find the slots held
            env.sql(
                "SELECT count(*) FROM mbus.timer_create_many((SELECT jsonb_agg("
                " jsonb_build_object('client_id', %s::bigint, 'group_key', 'g',"
                " 'event_key', 'b' || i, 'run_at', now() + make_interval(secs => i * 0.1),"
                " 'url', %s::text, 'retry', jsonb_build_object('fast_retries', 0)))"
                " FROM generate_series(1, 20) AS i))",
                (healthy.id, fast.url + "/b"),
            )
            added.append(time.time())
        return len(fast.received) >= 20

    dispatch_until(env, healthy_called, cfg, timeout=20.0)
    late = [
        r.at - datetime.fromisoformat(json.loads(r.body)["run_at"]).timestamp()
        for r in fast.received
    ]
    assert max(late) < 2.5, f"the healthy client's calls were up to {max(late):.1f}s late"
    assert all(s.max_inflight <= 8 for s in hanging)  # each hanging host within its bound


def test_lanes_give_a_stalled_calls_slot_back_within_the_stalled_budget() -> None:
    def cb(ident: int, host: str) -> Claimed:
        at = datetime.now(UTC)
        return Claimed(
            ident, 1, uuid4(), ident, "g", "e", at, at, f"http://{host}/x", {}, 0, "s", at
        )

    async def main() -> None:
        lanes = Lanes(per_client=9, per_host=9, slots=1, stall_after_s=0.1, stalled=1)
        for ident, host in [(1, "hangs.example"), (2, "slow.example"), (3, "hangs.example")]:
            lanes.put(cb(ident, host))
        first = await lanes.get()
        assert first is not None and first.id == 1
        # one slot, taken: the next call waits until the first stalls and gives it back
        second = await asyncio.wait_for(lanes.get(), 1.0)
        assert second is not None and second.id == 2 and lanes.stalled() == 1
        # the stalled budget is full: the second keeps its slot past stall_after_s, and the
        # hanging host (a call of it stalled) starts nothing, even once a slot is free
        third = asyncio.ensure_future(lanes.get())
        await asyncio.sleep(0.3)
        assert not third.done() and lanes.stalled() == 1
        lanes.done(second)
        await asyncio.sleep(0.05)
        assert not third.done()
        lanes.done(first)  # the stalled call ended: its host may call again
        got = await asyncio.wait_for(third, 1.0)
        assert got is not None and got.id == 3 and lanes.stalled() == 0
        lanes.done(got)
        assert lanes.in_flight() == ({}, {})

    asyncio.run(main())
