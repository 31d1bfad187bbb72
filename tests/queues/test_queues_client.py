"""The Python clients: the same tests run for the sync ``Bus`` and the ``AsyncBus``."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from pgmbus.errors import InvalidArgument, InvalidName, InvalidPayload, NotFound, StaleLease
from pgmbus.queues import AsyncBus, Bus, Message
from tools import async_to_sync


class AsyncAdapter:
    """Runs an AsyncBus's coroutines on a private loop, so one test serves both clients."""

    def __init__(self, bus: AsyncBus) -> None:
        self._bus = bus
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(bus.open())

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._bus, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._loop.run_until_complete(attr(*args, **kwargs))

        return call

    def listen(self, *args: Any, **kwargs: Any) -> Iterator[Message]:
        agen = self._bus.listen(*args, **kwargs)
        assert isinstance(agen, AsyncGenerator)  # declared an iterator; closed as a generator
        try:
            while True:
                yield self._loop.run_until_complete(agen.__anext__())
        finally:
            self._loop.run_until_complete(agen.aclose())

    def close(self) -> None:
        self._loop.run_until_complete(self._bus.close())
        self._loop.close()


@pytest.fixture(params=["sync", "async"])
def make_bus(request: pytest.FixtureRequest, autodb: str) -> Iterator[Callable[..., Any]]:
    """Factory of buses on a fresh database with queue ``jobs`` (sync or async client)."""
    made: list[Any] = []

    def factory(**kwargs: Any) -> Any:
        bus: Any
        if request.param == "sync":
            bus = Bus(autodb, **kwargs).open()
        else:
            bus = AsyncAdapter(AsyncBus(autodb, **kwargs))
        made.append(bus)
        return bus

    yield factory
    for bus in made:
        bus.close()


def test_post_and_consume_typed(make_bus: Callable[..., Any]) -> None:
    """post returns the iid; consume returns typed Messages (rows of mbus.qt_model)."""
    bus = make_bus()
    iid = bus.post("jobs", {"n": 1}, properties={"k": "v"})
    (m,) = bus.consume("jobs")
    assert isinstance(m, Message)
    assert (m.iid, m.data, m.properties, m.queue, m.consumer) == (
        iid,
        {"n": 1},
        {"k": "v"},
        "jobs",
        "default",
    )
    assert m.headers["destination"] == "jobs"
    assert bus.consume("jobs") == []


def test_a_bus_never_claims_through_a_name_another_pair_took(
    make_bus: Callable[..., Any],
) -> None:
    """Main: the bus checked (ka, kb_by_kc) once; after that consumer was dropped, queue
    ka_by_kb with consumer kc got the same generated names, and the old bus consumed and
    leased its messages, labelled as ka's. Now it claims nothing and says NotFound."""
    bus = make_bus()
    other = make_bus()
    bus.create_queue("ka")
    bus.create_consumer("ka", "kb_by_kc")
    bus.post("ka", {"n": 1})
    assert [m.data for m in bus.consume("ka", "kb_by_kc")] == [{"n": 1}]
    assert bus.lease("ka", "kb_by_kc") == []
    other.drop_consumer("ka", "kb_by_kc")
    other.create_queue("ka_by_kb")
    other.create_consumer("ka_by_kb", "kc")
    mine = other.post("ka_by_kb", {"for": "ka_by_kb/kc"})
    for claim in (bus.consume, bus.lease):
        with pytest.raises(NotFound, match="kb_by_kc"):
            claim("ka", "kb_by_kc", limit=10)
    (got,) = other.lease("ka_by_kb", "kc")
    assert got.iid == mine and got.attempts == 1


def test_posting_to_a_missing_queue_names_the_queue(make_bus: Callable[..., Any]) -> None:
    """Main: "function mbus.post_nosuch(jsonb, ...) does not exist" (and over HTTP too)."""
    bus = make_bus()
    with pytest.raises(NotFound, match="queue 'nosuch' does not exist"):
        bus.post("nosuch", {"n": 1})
    with pytest.raises(NotFound, match="queue 'nosuch' does not exist"):
        bus.post_batch("nosuch", [{"n": 1}])


def test_arguments_of_the_wrong_type_are_invalid_not_missing(
    make_bus: Callable[..., Any],
) -> None:
    """Main: iid=5 and limit=10**10 named no function: NotFound ("... does not exist")."""
    bus = make_bus()
    for bad in ({"iid": 5}, {"dedupe_key": 7}):
        with pytest.raises(InvalidArgument, match="must be a string"):
            bus.post("jobs", {}, **bad)
    for limit in (10**10, 1.5, -1, True):
        with pytest.raises(InvalidArgument, match="limit"):
            bus.consume("jobs", limit=limit)
        with pytest.raises(InvalidArgument, match="limit"):
            bus.lease("jobs", limit=limit)
    assert bus.consume("jobs", limit=10) == []
    # durations in seconds that timedelta cannot hold: OverflowError / ValueError before
    for seconds in (float("inf"), float("nan"), 1e20):
        with pytest.raises(InvalidArgument, match="out of range"):
            bus.lease("jobs", lease=seconds)


def test_post_joins_callers_transaction(autodb: str) -> None:
    """post accepts the caller's connection: the message exists exactly when it commits."""
    with Bus(autodb) as bus, psycopg.connect(autodb) as conn:
        bus.post("jobs", {"n": 1}, conn=conn)
        assert bus.peek("jobs") is False  # not committed yet: others do not see it
        conn.rollback()
        bus.post("jobs", {"n": 2}, conn=conn)
        conn.commit()
        assert [m.data for m in bus.consume("jobs", limit=5)] == [{"n": 2}]


def test_consume_in_callers_transaction_rollback_returns(autodb: str) -> None:
    """Transactional style from Python: a rollback returns the message (async connection)."""

    async def scenario() -> list[Any]:
        async with AsyncBus(autodb) as bus:
            await bus.post("jobs", {"n": 1})
            async with await psycopg.AsyncConnection.connect(autodb) as conn:
                (_m,) = await bus.consume("jobs", conn=conn)
                assert await bus.consume("jobs") == []  # locked by conn
                await conn.rollback()
            return [x.data for x in await bus.consume("jobs")]

    assert asyncio.run(scenario()) == [{"n": 1}]


def test_batch_post_and_consume(make_bus: Callable[..., Any]) -> None:
    """A batch post and consumen(amount)."""
    bus = make_bus()
    iids = bus.post_batch("jobs", [{"n": i} for i in range(10)], properties=[{}] * 10)
    got = bus.consume("jobs", limit=4)
    assert [m.iid for m in got] == iids[:4]
    assert len(bus.consume("jobs", limit=100)) == 6


def test_blocking_consume_wakes_on_notify(make_bus: Callable[..., Any], autodb: str) -> None:
    """A blocking consume wakes on the post's NOTIFY (poll interval set far beyond the wait)."""
    bus = make_bus(poll_interval=60.0)

    def later() -> None:
        time.sleep(0.3)
        with psycopg.connect(autodb, autocommit=True) as conn:
            conn.execute("SELECT mbus.post_jobs('{\"late\": 1}')")

    threading.Thread(target=later).start()
    started = time.monotonic()
    got = bus.consume("jobs", wait=30)
    assert [m.data for m in got] == [{"late": 1}]
    assert time.monotonic() - started < 30  # woken, not timed out (poll interval is 60 s)


def test_blocking_consume_falls_back_to_polling(make_bus: Callable[..., Any], autodb: str) -> None:
    """A lost notification costs latency only: polling finds a message that sent no NOTIFY."""
    bus = make_bus(poll_interval=0.1)

    def later() -> None:
        time.sleep(0.3)
        with psycopg.connect(autodb, autocommit=True) as conn:  # a row that never notified
            conn.execute(
                "INSERT INTO mbus.q_jobs (c, vt, id, iid, added, headers, data)"
                " SELECT cid, now(), 1, 'jobs.1@x', now(), '{}', '{\"quiet\": 1}'"
                " FROM mbus.consumer WHERE qname = 'jobs'"
            )

    threading.Thread(target=later).start()
    got = bus.consume("jobs", wait=20)
    assert [m.data for m in got] == [{"quiet": 1}]


def test_blocking_consume_times_out_empty(make_bus: Callable[..., Any]) -> None:
    """A blocking consume returns [] when the timeout passes."""
    bus = make_bus(poll_interval=0.05)
    assert bus.consume("jobs", wait=0.2) == []


def test_lease_ack_nack_extend_stale(make_bus: Callable[..., Any]) -> None:
    """Lease style from Python: ack, nack(delay), extend; a stale token raises StaleLease."""
    bus = make_bus()
    bus.post("jobs", {"n": 1})
    now = datetime.now(UTC) + timedelta(seconds=1)
    (m,) = bus.lease("jobs", lease=10, now=now)
    assert m.attempts == 1 and m.lease_token is not None
    end = bus.extend(m, 20, now=now + timedelta(seconds=5))
    assert end == now + timedelta(seconds=25)
    bus.nack(m, delay=60, now=now + timedelta(seconds=6))
    assert bus.lease("jobs", now=now + timedelta(seconds=30)) == []
    (again,) = bus.lease("jobs", lease=10, now=now + timedelta(seconds=67))
    assert again.attempts == 2
    with pytest.raises(StaleLease):
        bus.ack(m, now=now + timedelta(seconds=67))
    with pytest.raises(StaleLease):
        bus.ack(again, now=now + timedelta(seconds=80))  # its lease ended at +77 s
    (third,) = bus.lease("jobs", lease=10, now=now + timedelta(seconds=80))
    bus.ack(third, now=now + timedelta(seconds=81))
    assert bus.peek("jobs") is False


def test_take_peek_stats_queues_dmq(make_bus: Callable[..., Any]) -> None:
    """take, peek, stats, queue listing, the dmq and its replay from Python."""
    bus = make_bus()
    bus.create_queue("bungs")
    bus.create_consumer("bungs", "watch", "t.data ? 'w'")
    iid = bus.post("bungs", {"w": 1})
    assert bus.peek("bungs", iid) is True
    taken = bus.take(iid)
    assert taken is not None and taken.data == {"w": 1}
    assert bus.take(iid) is None
    names = {q.qname: q.consumers for q in bus.queues()}
    assert names["bungs"] == ["default", "watch"]
    iid2 = bus.post("jobs", {"bad": 1})
    (m,) = bus.lease("jobs")
    dmq_id = bus.bury(m, "ValueError: nope")
    dead = bus.dmq("jobs")
    assert [(d.dmq_id, d.iid, d.reason) for d in dead] == [(dmq_id, iid2, "ValueError: nope")]
    stats = {(s.qname, s.cname): s for s in bus.stats()}
    assert stats["jobs", "default"].dmq == 1 and stats["jobs", "default"].depth == 0
    assert bus.dmq_replay(dmq_id) == iid2
    assert [x.iid for x in bus.consume("jobs")] == [iid2]
    bus.drop_consumer("bungs", "watch")
    bus.drop_queue("bungs")
    assert "bungs" not in {q.qname for q in bus.queues()}


def test_bad_input_is_typed(make_bus: Callable[..., Any]) -> None:
    """Bad input gets a clear typed error (the issue)."""
    bus = make_bus()
    with pytest.raises(InvalidName):
        bus.post("Jobs", {"a": 1})
    with pytest.raises(InvalidName):
        bus.create_queue("my-queue")
    with pytest.raises(NotFound):
        bus.consume("nosuch")
    with pytest.raises(NotFound):
        bus.post("nosuch", {"a": 1})
    with pytest.raises(InvalidPayload):
        bus.post("jobs", [1, 2])
    with pytest.raises(InvalidPayload):
        bus.post("jobs", {"a": 1}, properties="x")


def test_listen_yields_and_acks(make_bus: Callable[..., Any]) -> None:
    """bus.listen(queue, consumer) yields messages; each is acked when the next is asked for."""
    bus = make_bus(poll_interval=0.05)
    bus.post_batch("jobs", [{"n": i} for i in range(3)])
    seen = []
    for m in bus.listen("jobs", batch=2):
        seen.append(m.data["n"])
        if len(seen) == 3:
            break
    assert seen == [0, 1, 2]
    stats = bus.stats("jobs")[0]
    assert stats.depth == 1 and stats.leased == 1  # the last one was not acked (loop broke)


def test_listen_keeps_the_leases_of_the_messages_claimed_ahead(
    make_bus: Callable[..., Any],
) -> None:
    """A loop body slower than the lease does not let the batch's later messages go to another
    consumer: their leases are extended before they are yielded, and each is yielded once."""
    bus = make_bus(poll_interval=0.05)
    bus.post_batch("jobs", [{"n": i} for i in range(3)])
    seen, stolen = [], []
    for m in bus.listen("jobs", lease=1.0, batch=3):
        seen.append((m.data["n"], m.attempts))
        time.sleep(0.7)  # past half the lease: the next ones must have been extended
        stolen += bus.lease("jobs", limit=10, lease=30)
        if len(seen) == 3:
            break
    assert stolen == []
    assert seen == [(0, 1), (1, 1), (2, 1)]


def test_listen_gives_back_what_it_claimed_ahead_when_the_loop_ends(
    make_bus: Callable[..., Any],
) -> None:
    """Breaking out of the loop gives the unyielded messages of the batch back at once; the
    current one stays leased (its body may not have finished)."""
    bus = make_bus(poll_interval=0.05)
    bus.post_batch("jobs", [{"n": i} for i in range(3)])
    listening = bus.listen("jobs", batch=3)
    first = next(listening)
    listening.close()
    assert first.data["n"] == 0
    stats = bus.stats("jobs")[0]
    assert (stats.ready, stats.leased) == (2, 1)
    assert [m.data["n"] for m in bus.lease("jobs", limit=10)] == [1, 2]


def test_generated_sync_client_is_current() -> None:
    """The sync Bus is generated from the AsyncBus; this fails when it is stale."""
    twin = next(t for t in async_to_sync.INPUTS if t.target.endswith("queues/_bus.py"))
    assert async_to_sync.stale((twin,)) == [], "run: make generate"
