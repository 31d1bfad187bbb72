"""Competing consumers, rollback, blocking take, wake-ups and plans, on committed data."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from tests.plans import explain_to_client


@pytest.mark.slow
def test_n_producers_m_consumers_exactly_once(autodb: str) -> None:
    """ "If a message was received by one process with mbus.consume(qname), another process will
    NOT receive it. This is a classic queue." (4 producers x 4 consumers, one consumer name)."""
    producers, consumers, per_producer = 4, 4, 150
    total = producers * per_producer
    got: list[int] = []
    lock = threading.Lock()
    done_posting = threading.Event()

    def produce(p: int) -> None:
        with psycopg.connect(autodb, autocommit=True) as conn:
            for i in range(per_producer):
                conn.execute("SELECT mbus.post_jobs(%s)", (Jsonb({"n": p * per_producer + i}),))

    def consume() -> None:
        with psycopg.connect(autodb) as conn:
            while True:
                rows = conn.execute("SELECT data FROM mbus.consumen_jobs_by_default(3)").fetchall()
                conn.commit()
                if rows:
                    with lock:
                        got.extend(r[0]["n"] for r in rows)
                elif done_posting.is_set():
                    with lock:
                        if len(got) >= total:
                            return
                    # posts may still be committing: look again
                    rows_left = conn.execute("SELECT count(*) FROM mbus.q_jobs").fetchone()
                    conn.commit()
                    if rows_left == (0,):
                        return
                else:
                    time.sleep(0.001)

    ps = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    cs = [threading.Thread(target=consume) for _ in range(consumers)]
    for t in ps + cs:
        t.start()
    for t in ps:
        t.join()
    done_posting.set()
    for t in cs:
        t.join(timeout=60)
    counts = Counter(got)
    assert [n for n, c in counts.items() if c > 1] == []  # nobody got a message twice
    assert sorted(counts) == list(range(total))  # and none was lost


def test_several_consumer_names_each_get_every_matching_message_once(autodb: str) -> None:
    """ "Each of them gets its own copy of the message" (3 consumer names, 2 processes each, one
    selective)."""
    with psycopg.connect(autodb, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_consumer('jobs', 'c1')")
        conn.execute("SELECT mbus.create_consumer('jobs', 'c2')")
        conn.execute("SELECT mbus.create_consumer('jobs', 'even', $$(t.data->>'n')::int % 2 = 0$$)")
        conn.execute("SELECT mbus.post_batch('jobs', %s)", ([Jsonb({"n": i}) for i in range(200)],))
    results: dict[str, list[int]] = {"c1": [], "c2": [], "even": []}
    lock = threading.Lock()

    def drain(cname: str) -> None:
        with psycopg.connect(autodb) as conn:
            while True:
                rows = conn.execute(
                    "SELECT data FROM mbus.consumen('jobs', %s, 7)", (cname,)
                ).fetchall()
                conn.commit()
                if not rows:
                    return
                with lock:
                    results[cname].extend(r[0]["n"] for r in rows)

    threads = [threading.Thread(target=drain, args=(c,)) for c in results for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(results["c1"]) == list(range(200))
    assert sorted(results["c2"]) == list(range(200))
    assert sorted(results["even"]) == list(range(0, 200, 2))


def test_rollback_returns_message_and_locked_is_skipped(autodb: str) -> None:
    """ "Why can a message not be received? ... 2. all the selectable parts of the queue are
    already taken by consumers receiving messages" (a claimed message is skipped, not waited
    for); and a rollback returns the message at once (transactional style)."""
    with psycopg.connect(autodb, autocommit=True) as admin:
        admin.execute("SELECT mbus.post_jobs('{\"only\": 1}')")
    with psycopg.connect(autodb) as a, psycopg.connect(autodb) as b:
        assert len(a.execute("SELECT * FROM mbus.consume('jobs')").fetchall()) == 1
        started = time.monotonic()
        assert b.execute("SELECT * FROM mbus.consume('jobs')").fetchall() == []
        assert time.monotonic() - started < 5  # skipped, did not wait for a
        b.commit()
        a.rollback()
        (row,) = b.execute("SELECT data FROM mbus.consume('jobs')").fetchall()
        assert row[0] == {"only": 1}
        b.commit()


def test_take_waits_for_holding_transaction(autodb: str) -> None:
    """ "WARNING: this is a blocking function: if the row with iid=msgid is already locked by some
    transaction, this function waits until the row is available"."""
    with psycopg.connect(autodb, autocommit=True) as admin:
        row = admin.execute("SELECT mbus.post_jobs('{\"x\": 1}')").fetchone()
        assert row is not None
        iid = row[0]
    result: list[Any] = []
    with psycopg.connect(autodb) as holder:
        holder.execute("SELECT * FROM mbus.consume('jobs')").fetchall()  # holds the row

        def take() -> None:
            with psycopg.connect(autodb) as taker:
                result.extend(
                    taker.execute("SELECT iid FROM mbus.take_from_jobs_by_default(%s)", (iid,))
                )
                taker.commit()

        thread = threading.Thread(target=take)
        thread.start()
        with psycopg.connect(autodb, autocommit=True) as watch:
            for _ in range(200):
                waiting = watch.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND query LIKE '%take_from_jobs_by_default%'"
                ).fetchone()
                if waiting == (1,):
                    break
                time.sleep(0.02)
            assert waiting == (1,)
        assert thread.is_alive() and result == []
        holder.rollback()  # the message comes back: take gets it
    thread.join(timeout=30)
    assert result == [(iid,)]


def test_committed_post_notifies_listeners(autodb: str) -> None:
    """Wake-ups: a committed post notifies listeners of its queue with the queue name only; a
    rolled-back post does not (the issue). Listeners register with mbus.await_queue; a post
    with nobody waiting sends nothing (NOTIFY serializes commits)."""
    with psycopg.connect(autodb, autocommit=True) as listener, psycopg.connect(autodb) as poster:
        listener.execute('LISTEN "mbus_q_jobs"')  # listening alone is not waiting
        poster.execute("SELECT mbus.post_jobs('{\"unheard\": 1}')")
        poster.commit()
        assert list(listener.notifies(timeout=0.3)) == []  # nobody registered as waiting
        listener.execute("SELECT mbus.await_queue('jobs')")
        poster.execute("SELECT mbus.post_jobs('{\"secret\": 1}')")
        poster.rollback()
        assert list(listener.notifies(timeout=0.3)) == []
        poster.execute("SELECT mbus.post_jobs('{\"secret\": 2}')")
        poster.execute("SELECT mbus.post_jobs('{\"secret\": 3}')")
        poster.commit()
        notes = list(listener.notifies(timeout=2, stop_after=1))
        assert [(n.channel, n.payload) for n in notes] == [("mbus_q_jobs", "jobs")]
        listener.execute("SELECT mbus.await_done('jobs')")
        assert listener.execute("SELECT pg_listening_channels()").fetchall() == []
        poster.execute("SELECT mbus.post_jobs('{\"after\": 1}')")
        poster.commit()
        assert list(listener.notifies(timeout=0.3)) == []


def _plans(conn: psycopg.Connection[Any], query: str) -> str:
    """The plans of every statement run by query (auto_explain sent to the client)."""
    plans = explain_to_client(conn)
    conn.execute(query).fetchall()
    conn.execute("SET auto_explain.log_min_duration = -1")
    return "\n".join(plans)


def test_claim_plans_use_the_claim_index_on_a_backlog(autodb: str) -> None:
    """Selection stays fast for a consumer whose selector matches a small fraction of a large
    backlog (the issue): EXPLAIN guard with 5,000 messages for another consumer."""
    with psycopg.connect(autodb, autocommit=True) as conn:
        conn.execute("SELECT mbus.create_consumer('jobs', 'rare', $$t.properties ? 'rare'$$)")
        conn.execute(
            "SELECT mbus.post_batch('jobs', array_agg('{}'::jsonb)) FROM generate_series(1, 5000)"
        )
        conn.execute("SELECT mbus.post_jobs('{\"r\": 1}', NULL, '{\"rare\": true}')")
        conn.execute("ANALYZE mbus.q_jobs")
        plans = _plans(conn, "SELECT * FROM mbus.consumen_jobs_by_rare(10)")
        # The table is segmented (q_jobs$0..$3, indexes q_jobs_<kind>$<n>): one ordered
        # Merge Append over the segments' claim indexes, then deletes by ctid.
        assert (
            'Index Scan using "q_jobs_claim$1"' in plans
            or 'Index Only Scan using "q_jobs_claim$1"' in plans
        )
        assert "Merge Append" in plans and "Tid Scan" in plans
        assert "Seq Scan" not in plans
        lease = _plans(conn, "SELECT * FROM mbus.lease_jobs_by_default(10, '1 min')")
        assert '"q_jobs_claim$1"' in lease and "Seq Scan" not in lease
        # take is not pinned: the planner may scan the empty segments sequentially (cost 0),
        # never the one holding the backlog.
        take = _plans(conn, "SELECT * FROM mbus.take('jobs.1@x')")  # an iid made elsewhere
        assert '"q_jobs_iid$1"' in take and 'Seq Scan on "q_jobs$1"' not in take
        own = _plans(conn, "SELECT * FROM mbus.take(mbus.get_iid('jobs'))")
        assert '"q_jobs_id$1"' in own and 'Seq Scan on "q_jobs$1"' not in own
