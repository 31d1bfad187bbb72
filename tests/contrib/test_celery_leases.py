"""The Kombu transport's lease keeper: an extension racing an ack is no loss; a lease really
lost is counted and told once."""

from __future__ import annotations

import logging
import time

import pytest
from kombu.connection import Connection

from pgmbus.contrib.kombu_transport import _LeaseKeeper, url_from_dsn
from pgmbus.queues import Bus

LOST = "was lost"


def test_extending_a_lease_an_ack_just_ended_is_not_a_loss(
    db_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Many messages are held (tasks running) while the keeper ticks every 50 ms; they are
    acked in the reverse of the keeper's order, so its extensions keep landing on messages
    acked since its snapshot (the ack releases the message, then ends its lease)."""
    with Connection(url_from_dsn(db_dsn), transport_options={"visibility_timeout": 0.15}) as conn:
        channel = conn.channel()
        channel.queue_declare("racing")
        for i in range(400):
            channel.basic_publish(channel.prepare_message(str(i)), "", "racing")
        caplog.set_level(logging.WARNING, logger="pgmbus.kombu")
        acked = 0
        while held := [m for _ in range(50) if (m := channel.basic_get("racing")) is not None]:
            for message in reversed(held):
                message.ack()
                acked += 1
        keeper = conn.transport.keeper
        assert acked == 400
        assert keeper.lost == 0
    assert [r.getMessage() for r in caplog.records if LOST in r.getMessage()] == []


def test_a_lease_really_lost_is_counted_and_told_once(
    db_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    with Bus(db_dsn) as bus:
        bus.create_queue("lost")
        bus.post("lost", {"n": 1})
        [held] = bus.lease("lost", lease=0.2)
        keeper = _LeaseKeeper(bus, lease=3600)  # its own ticks come too late to matter
        try:
            keeper.hold(held)
            time.sleep(0.3)
            [again] = bus.lease("lost", lease=30)  # the lease ended: another consumer took it
            assert again.iid == held.iid
            caplog.set_level(logging.WARNING, logger="pgmbus.kombu")
            keeper.tick()
            keeper.tick()
            assert keeper.lost == 1
            assert held.lease_token is not None
            assert keeper.release(held.lease_token) is None  # an ack will not tell it again
            told = [r.getMessage() for r in caplog.records if LOST in r.getMessage()]
            assert told == [f"lease of {held.iid} was lost (it may run twice)"]
            bus.ack(again)
        finally:
            keeper.stop()
