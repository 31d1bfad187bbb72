"""The lease consume style: visibility timeout, ack/nack/extend, stale tokens, attempts, dmq."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

Conn = psycopg.Connection[dict[str, Any]]
SEC = timedelta(seconds=1)


def t0(conn: Conn) -> datetime:
    row = conn.execute("SELECT clock_timestamp() AS t").fetchone()
    assert row is not None
    t: datetime = row["t"]
    return t


def lease(
    conn: Conn, when: datetime, amt: int = 1, secs: int = 30, max_attempts: int | None = None
) -> list[dict[str, Any]]:
    return conn.execute(
        "SELECT * FROM mbus.lease_jobs_by_default(%s, %s, %s, %s)",
        (amt, timedelta(seconds=secs), max_attempts, when),
    ).fetchall()


def test_lease_hides_message_until_expiry_then_redelivers(qconn: Conn) -> None:
    """Lease style: a leased message is invisible until the lease ends, then delivered again
    with attempts counted; the stale token's ack is refused (the issue)."""
    now = t0(qconn)
    qconn.execute("SELECT mbus.post_jobs('{\"a\": 1}')")
    (first,) = lease(qconn, now + SEC)
    assert first["attempts"] == 1 and first["lease_until"] == now + 31 * SEC
    assert lease(qconn, now + 30 * SEC) == []
    assert (
        qconn.execute(
            "SELECT * FROM mbus.consume('jobs', 'default', %s)", (now + 30 * SEC,)
        ).fetchall()
        == []
    )
    (second,) = lease(qconn, now + 32 * SEC)
    assert second["iid"] == first["iid"] and second["attempts"] == 2
    assert second["lease_token"] != first["lease_token"]
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT mbus.ack('jobs', %s, %s)", (first["lease_token"], now + 33 * SEC))
    assert exc.value.sqlstate == "MB007"
    qconn.rollback()


def test_ack_removes_and_expired_ack_is_refused(qconn: Conn) -> None:
    """ack with a live token removes the message; after the lease ended it is refused."""
    now = t0(qconn)
    qconn.execute("SELECT mbus.post_jobs('{\"a\": 1}')")
    qconn.execute("SELECT mbus.post_jobs('{\"a\": 2}')")
    one, two = lease(qconn, now, amt=2, secs=10)
    qconn.execute("SELECT mbus.ack_jobs(%s, %s)", (one["lease_token"], now + 9 * SEC))
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT mbus.ack_jobs(%s, %s)", (two["lease_token"], now + 10 * SEC))
    assert exc.value.sqlstate == "MB007"
    qconn.rollback()


def test_nack_with_delay_and_extend(qconn: Conn) -> None:
    """nack(delay) makes the message visible again after the delay; extend moves the lease end."""
    now = t0(qconn)
    qconn.execute("SELECT mbus.post_jobs('{\"a\": 1}')")
    (m,) = lease(qconn, now, secs=10)
    end = qconn.execute(
        "SELECT mbus.extend('jobs', %s, '1 min', %s) AS e", (m["lease_token"], now + 5 * SEC)
    ).fetchone()
    assert end == {"e": now + 65 * SEC}
    assert lease(qconn, now + 20 * SEC) == []  # still leased thanks to extend
    qconn.execute("SELECT mbus.nack('jobs', %s, '5 min', %s)", (m["lease_token"], now + 30 * SEC))
    assert lease(qconn, now + 60 * SEC) == []
    (again,) = lease(qconn, now + 331 * SEC)
    assert again["attempts"] == 2
    stats = qconn.execute(
        "SELECT leased, delayed, depth FROM mbus.queue_stats('jobs', %s)", (now + 332 * SEC,)
    ).fetchone()
    assert stats == {"leased": 1, "delayed": 0, "depth": 1}


def test_past_max_attempts_goes_to_dmq_with_reason(qconn: Conn) -> None:
    """Attempts are counted; past max_attempts the message goes to the dmq with the reason,
    keeping its iid (DESIGN)."""
    now = t0(qconn)
    row = qconn.execute("SELECT mbus.post_jobs('{\"poison\": 1}') AS iid").fetchone()
    assert row is not None
    for i in range(3):
        (m,) = lease(qconn, now + i * 100 * SEC, secs=10, max_attempts=3)
        assert m["attempts"] == i + 1
    assert lease(qconn, now + 400 * SEC, secs=10, max_attempts=3) == []
    dead = qconn.execute("SELECT * FROM mbus.dmq").fetchall()
    assert [(d["iid"], d["attempts"], d["cname"]) for d in dead] == [(row["iid"], 3, "default")]
    assert "max_attempts" in dead[0]["reason"]
    stats = qconn.execute("SELECT dmq, depth FROM mbus.queue_stats('jobs')").fetchone()
    assert stats == {"dmq": 1, "depth": 0}


def test_bury_moves_leased_message_to_dmq(qconn: Conn) -> None:
    """A worker that gives up buries the leased message in the dmq with its reason."""
    now = t0(qconn)
    qconn.execute("SELECT mbus.post_jobs('{\"a\": 1}')")
    (m,) = lease(qconn, now)
    qconn.execute("SELECT mbus.bury('jobs', %s, 'ValueError: bad', %s)", (m["lease_token"], now))
    dead = qconn.execute("SELECT iid, reason FROM mbus.dmq").fetchall()
    assert dead == [{"iid": m["iid"], "reason": "ValueError: bad"}]
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT mbus.bury('jobs', %s, 'again', %s)", (m["lease_token"], now))
    assert exc.value.sqlstate == "MB007"
    qconn.rollback()


def test_metrics(qconn: Conn) -> None:
    """Metrics in SQL: depth, ready, delayed, leased, oldest age, dmq count per queue and
    consumer (the issue)."""
    now = t0(qconn)
    qconn.execute("SELECT mbus.create_consumer('jobs', 'side', $$t.data ? 'side'$$)")
    qconn.execute("SELECT mbus.post_jobs('{\"a\": 1}')")
    qconn.execute("SELECT mbus.post_jobs('{\"side\": 1}')")
    qconn.execute("SELECT mbus.post_jobs('{\"b\": 1}', delayed_until => %s)", (now + 3600 * SEC,))
    qconn.execute("SELECT mbus.post_jobs('{\"c\": 1}', expires => %s)", (now + 2 * SEC,))
    lease(qconn, now + 10 * SEC)  # leases the oldest ready one: a
    rows = qconn.execute(
        "SELECT cname, depth, ready, delayed, leased, expired, oldest_age IS NOT NULL AS aged, dmq"
        " FROM mbus.queue_stats('jobs', %s)",
        (now + 10 * SEC,),
    ).fetchall()
    assert rows == [
        {
            "cname": "default",
            "depth": 4,
            "ready": 1,
            "delayed": 1,
            "leased": 1,
            "expired": 1,
            "aged": True,
            "dmq": 0,
        },
        {
            "cname": "side",
            "depth": 1,
            "ready": 1,
            "delayed": 0,
            "leased": 0,
            "expired": 0,
            "aged": True,
            "dmq": 0,
        },
    ]
    view = qconn.execute(
        "SELECT count(*) AS n FROM mbus.queue_metrics WHERE qname = 'jobs'"
    ).fetchone()
    assert view == {"n": 2}
