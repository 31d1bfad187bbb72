"""Queue features from Python (Bus and AsyncBus) and the CLI: dedupe keys, consume_after, pause,
resume, purge with a typed confirmation, counters, dmq delete."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from pgmbus.errors import InvalidArgument, InvalidName, InvalidPayload, NotFound
from pgmbus.queues import AsyncBus, Bus
from tests.cli.conftest import error_line, run


@pytest.fixture
def bus(autodb: str) -> Iterator[Bus]:
    with Bus(autodb) as b:
        yield b


def test_bus_post_with_dedupe_key_and_consume_after(bus: Bus) -> None:
    first = bus.post("jobs", {"n": 1}, dedupe_key="order-7")
    assert bus.post("jobs", {"n": 2}, dedupe_key="order-7") == first
    second = bus.post("jobs", {"n": 3}, consume_after=first)
    third = bus.post("jobs", {"n": 4}, consume_after=[first, second])
    assert [m.data for m in bus.consume("jobs", limit=10)] == [{"n": 1}]  # the others wait
    assert [m.iid for m in bus.consume("jobs", limit=10)] == [second]
    assert [m.iid for m in bus.consume("jobs", limit=10)] == [third]
    with pytest.raises(InvalidArgument):
        bus.post("jobs", {"n": 5}, dedupe_key="")
    assert bus.stats("jobs")[0].depth == 0


def test_bus_pause_resume_purge_counters(bus: Bus) -> None:
    bus.create_consumer("jobs", "audit")
    assert bus.pause("jobs") is True
    assert bus.pause("jobs") is False
    for n in range(3):
        bus.post("jobs", {"n": n})
    assert bus.consume("jobs", limit=10) == []
    assert bus.lease("jobs", "audit", limit=10, lease=30) == []
    assert all(s.paused for s in bus.stats("jobs"))
    assert bus.resume("jobs") is True
    assert len(bus.consume("jobs", limit=2)) == 2
    bus.pause("jobs", "audit")
    assert {s.cname: s.paused for s in bus.stats("jobs")} == {"audit": True, "default": False}
    assert bus.purge("jobs", "audit") == 3
    assert bus.purge("jobs") == 1
    totals = {c.cname: (c.qname, c.posted, c.consumed) for c in bus.counters("jobs")}
    assert totals == {None: ("jobs", 3, 2), "audit": ("jobs", 3, 0), "default": ("jobs", 3, 2)}
    stats = {s.cname: (s.posted, s.consumed) for s in bus.stats("jobs")}
    assert stats == {"audit": (3, 0), "default": (3, 2)}
    with pytest.raises(NotFound):
        bus.pause("jobs", "nobody")
    with pytest.raises(InvalidName):
        bus.purge("Bad Name")


def test_resume_wakes_a_waiting_consumer(bus: Bus, autodb: str) -> None:
    bus.pause("jobs")
    bus.post("jobs", {"n": 1})

    def later() -> None:
        time.sleep(0.5)
        with Bus(autodb) as other:
            other.resume("jobs")

    with Bus(autodb, poll_interval=30) as waiting:  # only a wake-up ends its wait early
        threading.Thread(target=later).start()
        started = time.monotonic()
        got = waiting.consume("jobs", wait=20)
    assert [m.data for m in got] == [{"n": 1}]
    assert 0.4 < time.monotonic() - started < 10  # woken by the resume, not by a poll


def test_bus_dmq_delete(bus: Bus) -> None:
    bus.post("jobs", {"n": 1})
    [m] = bus.lease("jobs", limit=1, lease=30)
    dmq_id = bus.bury(m, "poison")
    assert bus.dmq_delete(dmq_id) == "jobs"
    assert bus.dmq("jobs") == []
    with pytest.raises(NotFound):
        bus.dmq_delete(dmq_id)


def test_async_bus_has_the_same_features(autodb: str) -> None:
    async def scenario() -> tuple[Any, ...]:
        async with AsyncBus(autodb) as b:
            first = await b.post("jobs", {"n": 1}, dedupe_key="k")
            again = await b.post("jobs", {"n": 2}, dedupe_key="k")
            await b.pause("jobs")
            paused = await b.consume("jobs")
            await b.resume("jobs")
            got = await b.consume("jobs")
            purged = await b.purge("jobs")
            counters = await b.counters("jobs")
            return first, again, paused, [m.iid for m in got], purged, counters

    first, again, paused, got, purged, counters = asyncio.run(scenario())
    assert again == first and paused == [] and got == [first] and purged == 0
    assert (counters[0].cname, counters[0].posted, counters[0].consumed) == (None, 1, 1)


def test_bad_payload_types_are_typed(bus: Bus) -> None:
    with pytest.raises(InvalidPayload):
        bus.post("jobs", {"n": 1}, consume_after=[""])  # an empty iid is not an iid


# --- CLI ----------------------------------------------------------------------------------------


def test_cli_post_dedupe_and_consume_after(autodb: str) -> None:
    first = run("queue", "post", "jobs", '{"n": 1}', "--dedupe-key", "k", "--dsn", autodb)
    again = run("queue", "post", "jobs", '{"n": 2}', "--dedupe-key", "k", "--dsn", autodb)
    assert first.exit_code == again.exit_code == 0 and first.stdout == again.stdout
    iid = first.stdout.strip()
    after = run("queue", "post", "jobs", "{}", "--consume-after", iid, "--dsn", autodb)
    assert after.exit_code == 0
    with psycopg.connect(autodb) as conn:
        row = conn.execute("SELECT consume_after FROM mbus.q_jobs WHERE data = '{}'").fetchone()
    assert row == ([iid],)


def test_cli_pause_resume_and_stats(autodb: str) -> None:
    assert run("queue", "pause", "jobs", "--dsn", autodb).exit_code == 0
    run("queue", "post", "jobs", "{}", "--dsn", autodb)
    assert "no message" in run("queue", "consume", "jobs", "--dsn", autodb).output
    stats = run("queue", "stats", "jobs", "--json", "--dsn", autodb)
    [row] = json.loads(stats.stdout)
    assert (row["paused"], row["posted"], row["consumed"]) == (True, 1, 0)
    assert run("queue", "resume", "jobs", "--dsn", autodb).exit_code == 0
    assert '"data": {}' in run("queue", "consume", "jobs", "--dsn", autodb).stdout
    counters = json.loads(run("queue", "counters", "jobs", "--json", "--dsn", autodb).stdout)
    assert counters[0] == {"queue": "jobs", "consumer": None, "posted": 1, "consumed": 1}
    bad = run("queue", "pause", "jobs", "-c", "nobody", "--dsn", autodb)
    assert bad.exit_code == 1 and "nobody" in error_line(bad)


def test_cli_purge_asks_first(autodb: str) -> None:
    for n in range(2):
        run("queue", "post", "jobs", json.dumps({"n": n}), "--dsn", autodb)

    def depth() -> int:
        with psycopg.connect(autodb) as conn:
            row = conn.execute("SELECT count(*) FROM mbus.q_jobs").fetchone()
        assert row is not None
        return int(row[0])

    # no terminal, no --yes: refused, nothing purged
    refused = run("queue", "purge", "jobs", "--dsn", autodb)
    assert refused.exit_code == 2 and "--yes" in error_line(refused)
    assert "2 pending deliveries" in error_line(refused)
    wrong = run("queue", "purge", "jobs", "--confirm", "job", "--dsn", autodb)
    assert wrong.exit_code == 2 and "nothing purged" in error_line(wrong)
    assert depth() == 2
    unknown = run("queue", "purge", "nosuch", "--confirm", "nosuch", "--dsn", autodb)
    assert unknown.exit_code == 1 and "nosuch" in error_line(unknown)
    done = run("queue", "purge", "jobs", "--yes", "--dsn", autodb)
    assert done.exit_code == 0 and "purged 2" in done.output
    assert depth() == 0
    run("queue", "post", "jobs", "{}", "--dsn", autodb)
    older = run("queue", "purge", "jobs", "--confirm", "jobs", "--dsn", autodb)  # the older form
    assert older.exit_code == 0 and "purged 1" in older.output


def test_cli_dmq_delete(autodb: str) -> None:
    with Bus(autodb) as b:
        b.post("jobs", {"n": 1})
        [m] = b.lease("jobs", limit=1, lease=30)
        dmq_id = b.bury(m, "poison")
    refused = run("dmq", "delete", str(dmq_id), "--dsn", autodb)  # no terminal to ask on
    assert refused.exit_code == 2 and "--yes" in error_line(refused)
    ok = run("dmq", "delete", str(dmq_id), "--yes", "--dsn", autodb)
    assert ok.exit_code == 0 and f"{dmq_id} deleted (queue jobs)" in ok.stdout
    again = run("dmq", "delete", str(dmq_id), "--yes", "--dsn", autodb)
    assert again.exit_code == 1 and "does not exist" in error_line(again)
