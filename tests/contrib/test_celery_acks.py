"""The Kombu transport's batched acks: one statement acks a loop turn's messages, a lost lease
among them is told alone, and acks not flushed (a crash) leave the messages to come back."""

from __future__ import annotations

import logging
import time

import pytest
from kombu.connection import Connection

from pgmbus.contrib.kombu_acks import AckBuffer
from pgmbus.contrib.kombu_transport import _LeaseKeeper, url_from_dsn
from pgmbus.queues import Bus, Message
from tests.contrib.celery_helpers import wait_for


def _leased(bus: Bus, queue: str, n: int, lease: float = 30) -> list[Message]:
    bus.create_queue(queue)
    for i in range(n):
        bus.post(queue, {"n": i})
    return bus.lease(queue, limit=n, lease=lease)


def test_one_flush_acks_every_message_added(db_dsn: str) -> None:
    with Bus(db_dsn) as bus:
        messages = _leased(bus, "batched", 20)
        keeper = _LeaseKeeper(bus, lease=3600)
        acks = AckBuffer(bus, keeper, delay=3600)  # only the explicit flush acks
        try:
            for message in messages:
                keeper.hold(message)
                acks.add(message)
            assert bus.stats("batched")[0].leased == 20  # not acked before the flush
            acks.flush()
            [stats] = bus.stats("batched")
            assert (stats.depth, stats.consumed, len(keeper.held), keeper.lost) == (0, 20, 0, 0)
        finally:
            acks.stop()
            keeper.stop()


def test_the_thread_flushes_after_the_delay(db_dsn: str) -> None:
    with Bus(db_dsn) as bus:
        messages = _leased(bus, "timed", 5)
        keeper = _LeaseKeeper(bus, lease=3600)
        acks = AckBuffer(bus, keeper, delay=0.05)
        try:
            for message in messages:
                keeper.hold(message)
                acks.add(message)
            wait_for(lambda: bus.stats("timed")[0].depth == 0, timeout=10)
            assert bus.stats("timed")[0].consumed == 5
        finally:
            acks.stop()
            keeper.stop()


def test_a_lost_lease_in_a_batch_is_told_alone_and_the_others_are_acked(
    db_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    with Bus(db_dsn) as bus:
        good = _leased(bus, "partly", 3)
        bus.post("partly", {"n": "short"})
        [short] = bus.lease("partly", lease=0.2)
        keeper = _LeaseKeeper(bus, lease=3600)
        acks = AckBuffer(bus, keeper, delay=3600)
        try:
            for message in [*good, short]:
                keeper.hold(message)
            time.sleep(0.3)
            [again] = bus.lease("partly", lease=30)  # its lease ended: another took it
            assert again.iid == short.iid
            caplog.set_level(logging.WARNING, logger="pgmbus.kombu")
            for message in [good[0], short, *good[1:]]:
                acks.add(message)
            acks.flush()
            assert keeper.lost == 1
            told = [r.getMessage() for r in caplog.records if "was lost" in r.getMessage()]
            assert told == [f"lease of {short.iid} was lost (it may run twice)"]
            [stats] = bus.stats("partly")
            assert (stats.depth, stats.leased) == (1, 1)  # only the other consumer's lease is left
            bus.ack(again)
        finally:
            acks.stop()
            keeper.stop()


def test_acks_not_flushed_leave_the_messages_to_come_back(db_dsn: str) -> None:
    """At least once: a worker that dies with acks in its buffer acked nothing."""
    with Bus(db_dsn) as bus:
        messages = _leased(bus, "crashed", 4, lease=0.3)
        keeper = _LeaseKeeper(bus, lease=3600)
        acks = AckBuffer(bus, keeper, delay=3600)
        for message in messages:
            keeper.hold(message)
            acks.add(message)
        keeper.stop()  # the process dies: no flush, no more extensions
        time.sleep(0.4)
        again = bus.lease("crashed", limit=10, lease=30)
        assert sorted(m.iid for m in again) == sorted(m.iid for m in messages)
        assert all(m.attempts == 2 for m in again)


def test_kombu_acks_wait_for_the_flush_and_the_close_flushes_them(db_dsn: str) -> None:
    """Through Kombu: messages acked one by one stay leased until the buffer's flush (here
    the one at close), which acks them all."""
    options = {"ack_delay": 3600}  # the flush at close is the only one
    with Connection(url_from_dsn(db_dsn), transport_options=options) as conn:
        channel = conn.channel()
        channel.queue_declare("turns")
        for i in range(30):
            channel.basic_publish(channel.prepare_message(str(i)), "", "turns")
        got = [m for _ in range(30) if (m := channel.basic_get("turns")) is not None]
        for message in got:
            message.ack()
        bus = conn.transport.bus
        assert len(got) == 30
        [stats] = bus.stats("turns")
        assert (stats.leased, stats.consumed) == (30, 0)  # buffered, still held
    with Bus(db_dsn) as bus:
        [stats] = bus.stats("turns")
    assert (stats.depth, stats.consumed) == (0, 30)  # the close flushed them
