"""Client iids are remembered for queues.iid_window after their post (mbus.client_iids): a
producer's retry after an ambiguous commit stores nothing, also once the first was consumed."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from pgmbus.errors import InvalidArgument, translating

Conn = psycopg.Connection[dict[str, Any]]


def scalar(conn: Conn, query: str, *args: Any) -> Any:
    row = conn.execute(query, args).fetchone()
    assert row is not None
    return next(iter(row.values()))


def stored(conn: Conn) -> int:
    return int(scalar(conn, "SELECT count(*) FROM mbus.q_jobs"))


def connect(dsn: str) -> Conn:
    return psycopg.connect(dsn, row_factory=dict_row)


@pytest.mark.parametrize("own", [True, False], ids=["client-iid", "get-iid"])
def test_a_retry_after_the_first_was_consumed_stores_nothing(autodb: str, own: bool) -> None:
    """Main: the retry of a consumed message's iid stored a second message (chaos "stored 2x").
    The consume commits first: a post in the consuming transaction itself is the consumer's
    re-post, which is stored (tests/adversarial/test_queue_promises.py)."""
    with connect(autodb) as qconn:
        iid = "order-7" if own else scalar(qconn, "SELECT mbus.get_iid('jobs')")
        assert scalar(qconn, "SELECT mbus.post_jobs('{\"n\": 1}', iid => %s)", iid) == iid
        qconn.commit()
        got = qconn.execute("SELECT iid, data FROM mbus.consumen('jobs', 'default', 10)").fetchall()
        assert got == [{"iid": iid, "data": {"n": 1}}]
        qconn.commit()
        assert scalar(qconn, "SELECT mbus.post_jobs('{\"n\": 2}', iid => %s)", iid) == iid
        qconn.execute("SELECT mbus.post('jobs', '{\"n\": 3}', iid => %s)", (iid,))
        assert stored(qconn) == 0
        # another queue may take the same iid: the window is per queue
        qconn.execute("SELECT mbus.create_queue('jobs2', 1)")
        if own:
            assert scalar(qconn, "SELECT mbus.post_jobs2('{\"n\": 4}', iid => %s)", iid) == iid
            assert scalar(qconn, "SELECT count(*) FROM mbus.q_jobs2") == 1


@pytest.mark.parametrize("own", [True, False], ids=["client-iid", "get-iid"])
def test_a_retry_after_the_consumers_were_dropped_is_still_a_no_op(qconn: Conn, own: bool) -> None:
    """Found by the queue model: the retry of a committed post failed (MB008, no consumer)
    once the queue's consumers had been dropped, telling the producer its message was lost."""
    iid = "order-8" if own else scalar(qconn, "SELECT mbus.get_iid('jobs')")
    assert scalar(qconn, "SELECT mbus.post_jobs('{\"n\": 1}', iid => %s)", iid) == iid
    qconn.execute("SELECT mbus.drop_consumer('jobs', 'default')")
    assert scalar(qconn, "SELECT mbus.post_jobs('{\"n\": 1}', iid => %s)", iid) == iid
    for other in ("order-9", None):  # a new post still has no consumer to go to
        with pytest.raises(psycopg.Error) as caught, qconn.transaction():
            qconn.execute("SELECT mbus.post_jobs('{}', iid => %s)", (other,))
        assert caught.value.sqlstate == "MB008"
    assert stored(qconn) == 0


def test_posts_without_an_iid_are_not_remembered(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.post_jobs('{}')")
    qconn.execute("SELECT * FROM mbus.post_batch('jobs', ARRAY['{}', '{}']::jsonb[])")
    assert stored(qconn) == 3
    assert scalar(qconn, "SELECT count(*) FROM mbus.client_iids") == 0


def test_after_the_window_the_iid_may_be_posted_again(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.set_setting('queues.iid_window', '\"1 second\"')")
    qconn.execute("SELECT mbus.post_jobs('{\"n\": 1}', iid => 'w-1')")
    qconn.execute("SELECT * FROM mbus.consumen('jobs', 'default', 10)")
    # as if another transaction had consumed it (this one's own re-post would be stored)
    qconn.execute("UPDATE mbus.client_iids SET consumed_in = NULL")
    qconn.execute("SELECT mbus.post_jobs('{\"n\": 2}', iid => 'w-1')")
    assert stored(qconn) == 0  # within the window
    # a transaction's now() stands still: age the row instead of sleeping
    qconn.execute("UPDATE mbus.client_iids SET posted_at = posted_at - interval '2 seconds'")
    assert scalar(qconn, "SELECT mbus.post_jobs('{\"n\": 3}', iid => 'w-1')") == "w-1"
    assert stored(qconn) == 1
    # ... and it is remembered again from that post
    qconn.execute("SELECT mbus.post_jobs('{\"n\": 4}', iid => 'w-1')")
    assert stored(qconn) == 1
    # an old iid whose message is still pending stays idempotent after the window
    qconn.execute("UPDATE mbus.client_iids SET posted_at = posted_at - interval '2 seconds'")
    qconn.execute("SELECT mbus.post_jobs('{\"n\": 5}', iid => 'w-1')")
    assert stored(qconn) == 1


def test_upkeep_forgets_expired_iids(autodb: str) -> None:
    with psycopg.connect(autodb, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("SELECT mbus.post_jobs('{}', iid => 'old')")
        conn.execute("SELECT mbus.post_jobs('{}', iid => 'new')")
        conn.execute(
            "UPDATE mbus.client_iids SET posted_at = now() - interval '25 hours' WHERE iid = 'old'"
        )
        report = scalar(conn, "SELECT mbus.rotate_queue('jobs')")
        assert "skipped" not in report
        assert [r["iid"] for r in conn.execute("SELECT iid FROM mbus.client_iids")] == ["new"]
        report = scalar(conn, "SELECT mbus.maintain(now() + interval '25 hours')")
        assert report["client_iids_expired"] == 1 and report["errors"] == {}
        assert scalar(conn, "SELECT count(*) FROM mbus.client_iids") == 0


def test_a_rolled_back_post_does_not_reserve_the_iid(autodb: str) -> None:
    with connect(autodb) as a, connect(autodb) as b:
        a.execute("SELECT mbus.post_jobs('{\"by\": \"a\"}', iid => 'r-1')")
        result: list[Any] = []

        def second() -> None:
            result.append(scalar(b, "SELECT mbus.post_jobs('{\"by\": \"b\"}', iid => 'r-1')"))
            b.commit()

        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.3)
        assert t.is_alive(), "the second post must wait for the first transaction"
        a.rollback()
        t.join(10)
        assert result == ["r-1"]
        assert a.execute("SELECT data FROM mbus.q_jobs").fetchall() == [{"data": {"by": "b"}}]
        a.rollback()


def test_concurrent_posts_after_a_consume_store_nothing(autodb: str) -> None:
    """Two retries at once of a consumed message's iid: neither stores, neither waits."""
    with connect(autodb) as a, connect(autodb) as b:
        a.execute("SELECT mbus.post_jobs('{}', iid => 'c-1')")
        a.commit()
        a.execute("SELECT * FROM mbus.consumen('jobs', 'default', 10)")
        a.commit()
        b.execute("SET lock_timeout = '5s'")
        assert scalar(a, "SELECT mbus.post_jobs('{}', iid => 'c-1')") == "c-1"
        assert scalar(b, "SELECT mbus.post_jobs('{}', iid => 'c-1')") == "c-1"
        a.commit()
        b.commit()
        assert stored(a) == 0
        a.rollback()


def test_dmq_replay_is_not_swallowed_by_the_window(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.post_jobs('{\"n\": 1}', iid => 'd-1')")
    qconn.execute("SELECT * FROM mbus.consumen('jobs', 'default', 10)")
    qconn.execute("SELECT mbus.post_dmq('jobs', '{\"n\": 1}', NULL, NULL, 'd-1', 'failed', NULL)")
    dmq_id = scalar(qconn, "SELECT dmq_id FROM mbus.dmq WHERE iid = 'd-1'")
    assert scalar(qconn, "SELECT mbus.dmq_replay(%s)", dmq_id) == "d-1"
    assert qconn.execute("SELECT iid FROM mbus.q_jobs").fetchall() == [{"iid": "d-1"}]


@pytest.mark.parametrize("value", ['"0 seconds"', '"-1 hour"', '"banana"', '"2 years"', "3600"])
def test_a_bad_window_is_refused(qconn: Conn, value: str) -> None:
    qconn.execute("SAVEPOINT s")
    with pytest.raises(InvalidArgument, match=r"queues\.iid_window"), translating():
        qconn.execute("SELECT mbus.set_setting('queues.iid_window', %s::jsonb)", (value,))
    qconn.execute("ROLLBACK TO SAVEPOINT s")
    assert scalar(qconn, "SELECT mbus.iid_window()") == timedelta(hours=24)
