"""Reads on a hot standby, and writes there refused with a typed error naming the primary."""

from __future__ import annotations

import psycopg
import pytest

from pgmbus import streams
from pgmbus.errors import PrimaryRequired
from pgmbus.queues import Bus
from pgmbus.reconnect import is_transient
from tests.ha.harness import HAChaosCluster


@pytest.fixture
def standby_dsn(ha_cluster: HAChaosCluster) -> str:
    """A database with a queue, a topic and two groups, replayed on the standby; its DSN there."""
    ha_cluster.heal()
    dsn = ha_cluster.new_database()
    with Bus(dsn, max_size=1, rotate_every=None) as bus:
        bus.create_queue("jobs")
        bus.post("jobs", {"n": 1}, iid="one")
    with psycopg.connect(dsn, autocommit=True) as conn:
        streams.create_group(conn, "g", start="beginning")
        streams.create_group(conn, "gs", start="beginning")
        streams.subscribe(conn, "gs", "e.key = s.params->>'key'", {"key": "k"})
        streams.publish(conn, "t", {"n": 1}, key="k")
        streams.create_group(conn, "gx", start="now")
        streams.subscribe(conn, "gx", "e.key = s.params->>'key'", {"key": "nobody"})
        streams.publish(conn, "t", {"n": 2}, key="k")
        # gy matches only the last event: the batches before it have no match
        streams.create_group(conn, "gy", start="beginning")
        streams.subscribe(conn, "gy", "e.key = s.params->>'key'", {"key": "k3"})
        streams.publish(conn, "t", {"n": 3}, key="k3")
        # gz starts after every event, and a later transaction (an xid, no event) moves the
        # snapshot on: its next batch is empty and moves the group on a primary
        streams.create_group(conn, "gz", start="now")
        conn.execute("SELECT pg_current_xact_id()")
        lsn = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    primary = ha_cluster.ha.wait_for_primary()
    standby = next(n for n in ("node1", "node2") if n != primary)
    name = str(psycopg.conninfo.conninfo_to_dict(dsn)["dbname"])
    on_standby = ha_cluster.ha.node_dsn(standby, name)
    with psycopg.connect(on_standby, autocommit=True) as conn:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
        for _ in range(200):
            row = conn.execute(
                "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn[0] if lsn else "0/0",)
            ).fetchone()
            if row and row[0]:
                break
            conn.execute("SELECT pg_sleep(0.05)")
    return on_standby


def test_queue_reads_work_on_a_standby(standby_dsn: str) -> None:
    with Bus(standby_dsn, max_size=1, rotate_every=None) as bus:
        assert bus.peek("jobs", "one") is True
        assert bus.peek("jobs", "absent") is False
        assert sum(s.depth for s in bus.stats("jobs")) == 1


def test_stream_reads_work_on_a_standby(standby_dsn: str) -> None:
    with psycopg.connect(standby_dsn) as conn:
        start = streams.group_cursor(conn, "g")
        batch = streams.read_next(conn, "g", limit=10)
        assert [e.payload for e in batch.events] == [{"n": 1}, {"n": 2}, {"n": 3}]
        replayed = streams.read_between(conn, start, batch.cursor or start)
        assert [e.payload for e in replayed] == [{"n": 1}, {"n": 2}, {"n": 3}]
        assert {g["group_name"] for g in streams.group_status(conn)} >= {"g", "gs"}
        subs = streams.read_subscriptions(conn, "gs", limit=10)
        assert [e.payload for e in subs.events] == [{"n": 1}, {"n": 2}]


def test_read_subscriptions_reads_past_unmatched_batches_on_a_standby(standby_dsn: str) -> None:
    """Batches without a match are skipped on a standby without committing them (a write)."""
    with psycopg.connect(standby_dsn) as conn:
        before = streams.group_cursor(conn, "gy")
        batch = streams.read_subscriptions(conn, "gy", limit=1)
        assert [e.payload for e in batch.events] == [{"n": 3}]
        assert streams.read_subscriptions(conn, "gx", limit=10).events == []
        assert streams.group_cursor(conn, "gy") == before, "the group did not move"
        # the same again in the next transaction: nothing was written, nothing was skipped
        conn.rollback()
        again = streams.read_subscriptions(conn, "gy", limit=1)
        assert [e.payload for e in again.events] == [{"n": 3}]


def test_read_next_of_a_caught_up_group_on_a_standby(standby_dsn: str) -> None:
    """An empty batch moves the group on by itself on the primary; on a standby it reads only."""
    with psycopg.connect(standby_dsn) as conn:
        before = streams.group_cursor(conn, "gz")
        assert streams.read_next(conn, "gz", limit=10).events == []
        assert streams.group_cursor(conn, "gz") == before


def test_a_write_on_a_standby_names_the_primary_requirement(standby_dsn: str) -> None:
    with (
        Bus(standby_dsn, max_size=1, rotate_every=None) as bus,
        pytest.raises(PrimaryRequired) as info,
    ):
        bus.post("jobs", {"n": 2})
    assert info.value.sqlstate == "25006"  # the server said 0A000 "... during recovery"
    assert "needs the primary" in str(info.value)
    assert "target_session_attrs=read-write" in str(info.value)
    assert is_transient(info.value), "a loop retries it: a new connection may reach the primary"
    with psycopg.connect(standby_dsn) as conn, pytest.raises(PrimaryRequired):
        streams.commit(conn, "g", streams.read_next(conn, "g").cursor or "")


def test_the_standby_position_is_ignored_on_a_primary(ha_cluster: HAChaosCluster) -> None:
    """mbus.standby_read_from, read_subscriptions' hand-over on a standby, moves nobody's read
    on a primary: a session that sets it still reads from its group's position."""
    dsn = ha_cluster.new_database()
    with psycopg.connect(dsn, autocommit=True) as conn:
        streams.create_group(conn, "g", start="beginning")
        streams.publish(conn, "t", {"n": 1})
        streams.publish(conn, "t", {"n": 2})
    with psycopg.connect(dsn) as conn:
        past = streams.read_next(conn, "g", limit=10).cursor
        assert past is not None
        conn.rollback()
        conn.execute("SELECT set_config('mbus.standby_read_from', %s, false)", (past,))
        batch = streams.read_next(conn, "g", limit=10)
        assert [e.payload for e in batch.events] == [{"n": 1}, {"n": 2}]
