"""Temporary queues and consumers, blocking consume, request-response across processes.

Every test's docstring quotes the design document's statement it checks, translated into English.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from pgmbus.errors import TimeoutExpired
from pgmbus.queues import Bus
from tests.processes import reap, stop

Conn = psycopg.Connection[dict[str, Any]]


def scalar(conn: Conn, query: str, *args: Any) -> Any:
    row = conn.execute(query, args).fetchone()
    assert row is not None
    return next(iter(row.values()))


def collect_until(conn: Conn, want: int) -> int:
    """Call clear_tempq until it collected ``want`` objects (a closed backend takes a moment to
    leave pg_stat_activity); returns how many it collected."""
    got = 0
    for _ in range(200):
        got += int(scalar(conn, "SELECT mbus.clear_tempq()"))
        if got >= want:
            break
        time.sleep(0.02)
    return got


def test_temporary_queue_lives_as_long_as_its_session(db_dsn: str) -> None:
    """ "A temporary queue is created by mbus.create_temporary_queue(). Messages are sent with the
    usual mbus.post(qname, data...) and received with the usual mbus.consume(qname). Temporary
    queues need not be dropped: they are dropped automatically after the session ends ...
    temporary queues must be cleared of garbage periodically by calling mbus.clear_tempq()"."""
    with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as other:
        with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as owner:
            tq = scalar(owner, "SELECT mbus.create_temporary_queue()")
            other.execute("SELECT mbus.post(%s, %s)", (tq, Jsonb({"n": 1})))
            assert scalar(other, "SELECT mbus.clear_tempq()") == 0  # its session is alive
            rows = owner.execute("SELECT data FROM mbus.consume(%s)", (tq,)).fetchall()
            assert rows == [{"data": {"n": 1}}]
        assert collect_until(other, 1) == 1
        assert scalar(other, "SELECT count(*) FROM mbus.queue WHERE qname = %s", tq) == 0
        assert scalar(other, "SELECT to_regclass(%s) IS NULL", f"mbus.q_{tq}")


def test_create_queue_refuses_a_live_temporary_queues_name(db_dsn: str) -> None:
    """A "create" must not hand out a queue that another session's end will drop: MB003,
    and the temporary queue is left as it was."""
    with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as other:
        with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as owner:
            tq = scalar(owner, "SELECT mbus.create_temporary_queue()")
            for conn in (other, owner):
                with pytest.raises(psycopg.Error, match="temporary queue") as caught:
                    conn.execute("SELECT mbus.create_queue(%s, 2)", (tq,))
                assert caught.value.sqlstate == "MB003"
            assert scalar(other, "SELECT ncons FROM mbus.queue WHERE qname = %s", tq) == 1
        assert collect_until(other, 1) == 1
        other.execute("SELECT mbus.create_queue(%s)", (tq,))  # free again once collected
        assert scalar(other, "SELECT count(*) FROM mbus.temp_object WHERE qname = %s", tq) == 0


def test_temporary_consumer_lives_as_long_as_its_session(db_dsn: str) -> None:
    """ "Temporary consumers are created by mbus.create_temporary_consumer(qname text, selector
    text). The function returns the temporary consumer's name. The consumer exists while the
    current session is active. To remove stale consumers mbus.clear_tempq() must be called"."""
    with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as other:
        other.execute("SELECT mbus.create_queue('events', 1)")
        with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as owner:
            tc = scalar(
                owner,
                "SELECT mbus.create_temporary_consumer('events', %s)",
                "(t.properties->>'k') = 'x'",
            )
            assert tc.startswith("tc_")
            other.execute(
                "SELECT mbus.post('events', %s, properties => %s)",
                (Jsonb({"n": 1}), Jsonb({"k": "x"})),
            )
            other.execute(
                "SELECT mbus.post('events', %s, properties => %s)",
                (Jsonb({"n": 2}), Jsonb({"k": "y"})),
            )
            got = owner.execute("SELECT data FROM mbus.consume('events', %s)", (tc,)).fetchall()
            assert got == [{"data": {"n": 1}}]
        assert collect_until(other, 1) == 1
        assert scalar(other, "SELECT count(*) FROM mbus.consumer WHERE cname = %s", tc) == 0
        assert scalar(other, "SELECT count(*) FROM mbus.consumer WHERE qname = 'events'") == 1


def test_consume_from_a_temporary_queue_can_block(db_dsn: str) -> None:
    """ "Consuming from temporary queues can be blocking!"."""
    with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as owner:
        tq = scalar(owner, "SELECT mbus.create_temporary_queue()")

        def later() -> None:
            time.sleep(0.3)
            with psycopg.connect(db_dsn, autocommit=True) as c:
                c.execute("SELECT mbus.post(%s, %s)", (tq, Jsonb({"late": True})))

        t = threading.Thread(target=later)
        t.start()
        rows = owner.execute(
            "SELECT data FROM mbus.consume_wait(%s, timeout => '20 seconds')", (tq,)
        ).fetchall()
        t.join()
        assert rows == [{"data": {"late": True}}]
        empty = owner.execute(
            "SELECT data FROM mbus.consume_wait(%s, timeout => '50 milliseconds')", (tq,)
        ).fetchall()
        assert empty == []


RESPONDER = """
import sys
from pgmbus.queues import Bus
with Bus(sys.argv[1], poll_interval=0.2) as bus:
    for _ in range(2):
        for m in bus.consume("calc", wait=30):
            bus.reply(m, {"sum": m.data["a"] + m.data["b"]})
"""


def test_request_reply_across_processes(db_dsn: str) -> None:
    """Request-response (the design document: queues can do "3. request-response"): bus.request
    posts with a temporary reply queue and a correlation id, a responder in another process answers
    with bus.reply, and the reply queue is gone afterwards."""
    with Bus(db_dsn, poll_interval=0.2) as bus:
        bus.create_queue("calc")
        proc = subprocess.Popen([sys.executable, "-c", RESPONDER, db_dsn])
        try:
            first = bus.request("calc", {"a": 2, "b": 3}, timeout=30)
            second = bus.request("calc", {"a": 10, "b": 5}, timeout=30)
            assert stop(proc, None).returncode == 0  # the responder exits after two replies
        finally:
            reap(proc)
        assert first.data == {"sum": 5} and second.data == {"sum": 15}
        assert first.headers["correlation_id"] != second.headers["correlation_id"]
        assert [q.qname for q in bus.queues()] == ["calc"]


def test_request_timeout_raises_and_leaves_nothing(db_dsn: str) -> None:
    """A request nobody answers raises TimeoutExpired; the request is taken back and the reply
    queue dropped; a late reply finds the requester gone and is not posted."""
    with Bus(db_dsn, poll_interval=0.1) as bus:
        bus.create_queue("calc")
        with pytest.raises(TimeoutExpired):
            bus.request("calc", {"a": 1, "b": 1}, timeout=0.3)
        assert [q.qname for q in bus.queues()] == ["calc"]
        assert not bus.peek("calc")
        with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as c:
            assert scalar(c, "SELECT count(*) FROM mbus.temp_object") == 0
        iid = bus.post("calc", {"a": 1}, headers={"reply_to": "tq_999999", "correlation_id": "x"})
        late = bus.consume("calc")
        assert late[0].iid == iid
        assert bus.reply(late[0], {"sum": 0}) is False


def test_regular_maintenance_collects_temporary_queues(db_dsn: str) -> None:
    """ "Temporary queues must be cleared of garbage periodically": mbus.maintain(), the call
    that `pgmbus maintain` and the stream workers make regularly, also runs clear_tempq."""
    with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as other:
        with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as owner:
            tq = scalar(owner, "SELECT mbus.create_temporary_queue()")
            report = scalar(other, "SELECT mbus.maintain()")
            assert report["temporary_dropped"] == 0  # its session is alive
        dropped = 0
        for _ in range(200):
            dropped += int(scalar(other, "SELECT mbus.maintain()")["temporary_dropped"])
            if dropped:
                break
            time.sleep(0.02)
        assert dropped == 1
        assert scalar(other, "SELECT count(*) FROM mbus.queue WHERE qname = %s", tq) == 0
