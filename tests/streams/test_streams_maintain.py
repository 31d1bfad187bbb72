"""Maintenance: partitions ahead, retention that waits for live groups, loud lag expiry."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

from pgmbus import streams
from pgmbus.errors import InvalidState
from tests.streams.conftest import Connect, drain


def _maintain(conn: psycopg.Connection[Any], at: datetime) -> dict[str, Any]:
    row = conn.execute("SELECT mbus.maintain(%s)", (at,)).fetchone()
    assert row is not None
    result: dict[str, Any] = row[0]
    return result


def _now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("SELECT now()").fetchone()
    assert row is not None
    value: datetime = row[0]
    return value


def test_rollover_and_partitions_ahead(connect: Connect) -> None:
    conn = connect(autocommit=True)
    now = _now(conn)
    first = streams.publish(conn, "t", {"n": 1})
    report = _maintain(conn, now + timedelta(days=1, hours=1))
    assert report["created"]  # the next partition ahead
    second = streams.publish(conn, "t", {"n": 2})
    assert second >> 40 == (first >> 40) + 1  # ids moved on to the next partition
    parts = conn.execute(
        "SELECT partition_no, opened_at IS NOT NULL, closed_at IS NOT NULL "
        "FROM mbus.event_partitions ORDER BY 1"
    ).fetchall()
    assert parts[0] == (1, True, True)
    assert parts[1] == (2, True, False)
    assert len(parts) >= 4  # current + two ahead
    assert _maintain(conn, now + timedelta(days=1, hours=2))["created"] == []  # idempotent


def test_retention_waits_for_a_stopped_group(connect: Connect) -> None:
    conn = connect(autocommit=True)
    now = _now(conn)
    streams.create_group(conn, "stopped")
    streams.create_group(conn, "live")
    ids = streams.publish_batch(conn, "t", [{"i": i} for i in range(5)])
    assert len(drain(conn, "live")) == 5
    _maintain(conn, now + timedelta(days=1, hours=1))  # partition 1 closes
    report = _maintain(conn, now + timedelta(days=9))  # past the 7-day retention
    assert report["dropped"] == []
    assert report["kept"] == [{"partition": "events_0000001", "groups": ["stopped"]}]
    got = drain(conn, "stopped")
    assert [e.id for e in got] == ids  # nothing was lost while it was stopped
    report = _maintain(conn, now + timedelta(days=9))
    assert report["dropped"] == ["events_0000001"]
    assert conn.execute("SELECT count(*) FROM mbus.events").fetchone() == (0,)


def test_lagging_group_is_expired_loudly_and_stops_holding_retention(connect: Connect) -> None:
    conn = connect(autocommit=True)
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    now = _now(conn)
    streams.create_group(conn, "slow")
    streams.create_group(conn, "idle")  # nothing unread: never expires
    streams.configure_group(conn, "slow", max_lag=timedelta(days=1))
    streams.configure_group(conn, "idle", max_lag=timedelta(days=1))
    streams.publish(conn, "t", {"n": 1})
    drain(conn, "idle")
    report = _maintain(conn, now + timedelta(days=2))
    assert report["expired_groups"] == ["slow"]
    assert any("consumer group slow expired" in n for n in notices)
    assert streams.counters(conn)["groups_expired"] == 1
    alarm = conn.execute(
        "SELECT payload FROM mbus.events WHERE topic = 'mbus.group_expired'"
    ).fetchone()
    assert alarm is not None and alarm[0]["group"] == "slow"
    with pytest.raises(InvalidState, match="expired"):
        streams.read_next(conn, "slow")
    # an expired group does not hold partitions back
    report = _maintain(conn, now + timedelta(days=12))
    assert "events_0000001" in report["dropped"]
    # seek revives it
    streams.seek(conn, "slow", "now")
    assert streams.read_next(conn, "slow").events == []


def test_settings_drive_retention(connect: Connect) -> None:
    conn = connect(autocommit=True)
    now = _now(conn)
    conn.execute("SELECT mbus.set_setting('streams.partition_interval', '\"1 hour\"')")
    conn.execute("SELECT mbus.set_setting('streams.retention', '\"2 hours\"')")
    conn.execute("SELECT mbus.set_setting('streams.partitions_ahead', '4')")
    streams.publish(conn, "t", {})
    _maintain(conn, now + timedelta(hours=1, minutes=1))
    report = _maintain(conn, now + timedelta(hours=3, minutes=2))
    assert report["dropped"] == ["events_0000001"]
    n = conn.execute("SELECT count(*) FROM mbus.event_partitions WHERE opened_at IS NULL")
    assert n.fetchone() == (4,)


def test_maintain_heals_a_sequence_moved_by_a_rolled_back_maintain(connect: Connect) -> None:
    conn = connect()
    # what a rolled-back rollover leaves behind: the sequence in a range with no partition
    conn.execute("SELECT setval('mbus.event_seq', (50::bigint << 40), false)")
    conn.commit()
    report = _maintain(conn, _now(conn))
    conn.commit()
    assert "events_0000050" in report["created"]
    eid = streams.publish(conn, "t", {})
    conn.commit()
    assert eid >> 40 == 50
    closed = conn.execute(
        "SELECT closed_at IS NOT NULL FROM mbus.event_partitions WHERE partition_no = 1"
    ).fetchone()
    assert closed == (True,)  # the old partition can age out
