"""Settings: a registry of keys with typed bounds; maintain() survives a part that fails."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pgmbus import streams
from pgmbus.errors import InvalidArgument, translating
from tests.streams.conftest import Connect, drain


def _settings(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return conn.execute("SELECT key, value FROM mbus.settings ORDER BY key").fetchall()


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


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("probe", 1),
        ("streams.retentoin", "7 days"),
        ("", "7 days"),
        ("streams.retention", "banana"),
        ("streams.retention", "-1 day"),
        ("streams.retention", "0 seconds"),
        ("streams.retention", "1 day -25 hours"),
        ("streams.retention", "1000 years"),
        ("streams.retention", "100000000000 years"),
        ("streams.retention", 7),
        ("streams.retention", None),
        ("streams.retention", ["7 days"]),
        ("streams.partition_interval", "1 second"),
        ("spark.staged_ttl", "soon"),
        ("streams.partitions_ahead", "2"),
        ("streams.partitions_ahead", 2.5),
        ("streams.partitions_ahead", -1),
        ("streams.partitions_ahead", 0),
        ("streams.partitions_ahead", 1000000),
        ("streams.partitions_ahead", 1e30),
        ("streams.partitions_ahead", True),
    ],
)
def test_bad_settings_are_refused_and_change_nothing(
    connect: Connect, key: str, value: object
) -> None:
    conn = connect(autocommit=True)
    before = _settings(conn)
    with pytest.raises(InvalidArgument), translating():
        conn.execute("SELECT mbus.set_setting(%s, %s)", (key, Jsonb(value)))
    assert _settings(conn) == before


def test_good_settings_are_stored(connect: Connect) -> None:
    conn = connect(autocommit=True)
    conn.execute("SELECT mbus.set_setting('streams.retention', '\"30 days\"')")
    conn.execute("SELECT mbus.set_setting('streams.partitions_ahead', '4.0')")
    conn.execute("SELECT mbus.set_setting('spark.staged_ttl', '\"2 hours\"')")
    got = dict(_settings(conn))
    assert got["streams.retention"] == "30 days"
    assert got["streams.partitions_ahead"] == 4
    assert got["spark.staged_ttl"] == "2 hours"
    keys = {r[0] for r in conn.execute("SELECT key FROM mbus.setting_spec()")}
    assert set(got) <= keys


def test_maintain_does_the_other_parts_when_one_fails(connect: Connect) -> None:
    conn = connect(autocommit=True)
    now = _now(conn)
    # a value forced into the table by hand (set_setting would refuse it)
    conn.execute("UPDATE mbus.settings SET value = '\"banana\"' WHERE key = 'streams.retention'")
    streams.create_group(conn, "sse")
    sub = streams.subscribe(conn, "sse", "e.topic = 'x'", expires_after=timedelta(minutes=1))
    streams.publish(conn, "t", {})
    report = _maintain(conn, now + timedelta(days=1, hours=1))
    assert set(report["errors"]) == {"retention"}
    assert "banana" in report["errors"]["retention"]
    assert report["created"]  # partitions: rolled over and kept ahead
    assert report["expired_subscriptions"] == 1
    assert conn.execute(
        "SELECT count(*) FROM mbus.subscriptions WHERE id = %s", (sub,)
    ).fetchone() == (0,)
    # a broken partition interval stops only the partitions part
    conn.execute("UPDATE mbus.settings SET value = '\"1 day\"' WHERE key = 'streams.retention'")
    conn.execute(
        "UPDATE mbus.settings SET value = '\"x\"' WHERE key = 'streams.partition_interval'"
    )
    streams.drop_group(conn, "sse")  # nothing holds partition 1 any more
    report = _maintain(conn, now + timedelta(days=12))
    assert set(report["errors"]) == {"partitions"}
    assert report["dropped"] == ["events_0000001"]  # retention still ran
    conn.execute(
        "UPDATE mbus.settings SET value = '\"1 day\"' WHERE key = 'streams.partition_interval'"
    )
    assert _maintain(conn, now + timedelta(days=12))["errors"] == {}


def test_expiring_one_group_never_expires_another(connect: Connect) -> None:
    conn = connect(autocommit=True)
    now = _now(conn)
    for name in ("aa_slow", "zz_idle"):
        streams.create_group(conn, name)
        streams.configure_group(conn, name, max_lag=timedelta(hours=1))
    streams.publish(conn, "t", {})
    drain(conn, "zz_idle")  # caught up, then idle: its position ages
    report = _maintain(conn, now + timedelta(hours=2))
    assert report["expired_groups"] == ["aa_slow"]
    # the next runs see the 'mbus.group_expired' event as new, not as a lag of max_lag
    report = _maintain(conn, now + timedelta(hours=2, minutes=1))
    assert report["expired_groups"] == []
    states = dict(conn.execute("SELECT name, state FROM mbus.stream_groups").fetchall())
    assert states == {"aa_slow": "expired", "zz_idle": "active"}
    assert [e.topic for e in drain(conn, "zz_idle")] == ["mbus.group_expired"]


def test_the_worker_logs_a_failed_maintenance_part_and_goes_on(
    connect: Connect, db_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    conn = connect(autocommit=True)
    conn.execute("UPDATE mbus.settings SET value = '\"banana\"' WHERE key = 'streams.retention'")
    streams.create_group(conn, "w")
    streams.publish(conn, "t", {})
    seen: list[int] = []
    worker = streams.StreamWorker(
        db_dsn, "w", lambda _c, e: seen.append(e.id), maintain_every=timedelta(0)
    )
    with caplog.at_level("WARNING", logger="pgmbus.streams"):
        worker.run(stop=lambda: bool(seen), idle_wait=0.1)
    assert len(seen) == 1 and worker.stats.maintained >= 1
    assert any("retention" in r.getMessage() for r in caplog.records), caplog.records
