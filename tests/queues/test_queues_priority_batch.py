"""Priority beyond the single post: batch posts (postn_<q>, mbus.post_batch, Bus,
HTTP), their one-by-one fallbacks, triggers, the dmq and its replay, and segment rotation all
keep a message's priority; a bad priority array is refused and changes nothing."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from pgmbus.errors import InvalidArgument
from pgmbus.queues import Bus

Conn = psycopg.Connection[dict[str, Any]]


def ns(rows: list[dict[str, Any]]) -> list[int]:
    return [int(r["data"]["n"]) for r in rows]


def drain(conn: Conn, queue: str = "jobs") -> list[int]:
    return ns(
        conn.execute("SELECT data FROM mbus.consumen(%s, 'default', 1000)", (queue,)).fetchall()
    )


def postn(conn: Conn, ns_: list[int], prios: list[int | None] | None, **kw: Any) -> list[str]:
    headers = kw.get("headers")
    rows = conn.execute(
        "SELECT iid FROM mbus.postn_jobs(%s, %s, priority => %s) AS p(iid)",
        ([Jsonb({"n": n}) for n in ns_], headers, prios),
    ).fetchall()
    return [r["iid"] for r in rows]


def test_postn_stores_a_priority_per_message(qconn: Conn) -> None:
    postn(qconn, [1, 2, 3, 4, 5], [0, 3, None, 3, 9])
    assert drain(qconn) == [5, 2, 4, 1, 3]


def test_post_batch_passes_the_priorities(qconn: Conn) -> None:
    qconn.execute(
        "SELECT count(*) FROM mbus.post_batch('jobs', %s, priority => %s)",
        ([Jsonb({"n": 1}), Jsonb({"n": 2})], [0, 1]),
    )
    assert drain(qconn) == [2, 1]


@pytest.mark.parametrize(
    ("prios", "message"),
    [
        ([1, 2], "as many elements as data"),
        ([0, 32768, 0], "32768 is not in 0..32767"),
        ([-1, 0, 0], "-1 is not in 0..32767"),
    ],
)
def test_a_bad_priority_array_is_refused_and_posts_nothing(
    qconn: Conn, prios: list[int], message: str
) -> None:
    qconn.execute("SAVEPOINT s")
    with pytest.raises(psycopg.Error, match=message) as caught:
        postn(qconn, [1, 2, 3], prios)  # type: ignore[arg-type]
    assert caught.value.sqlstate == "MB006"
    qconn.execute("ROLLBACK TO SAVEPOINT s")
    assert drain(qconn) == []


def test_the_one_by_one_fallbacks_keep_the_priority(qconn: Conn) -> None:
    # consume_after in a header sends the batch through mbus.post_each (the client iid it
    # names is not pending: nothing to wait for)
    postn(
        qconn,
        [1, 2, 3],
        [0, 0, 7],
        headers=[Jsonb({}), Jsonb({}), Jsonb({"consume_after": ["gone-1"]})],
    )
    assert drain(qconn) == [3, 1, 2]
    # a selector that raises sends the batch one by one through post_<q>; the failed copy's
    # dmq row keeps the message's priority
    qconn.execute(
        "SELECT mbus.create_consumer('jobs', 'picky', selector => $$(t.data->>'n')::int > 1$$)"
    )
    qconn.execute(
        "SELECT count(*) FROM mbus.postn_jobs(%s, priority => %s)",
        ([Jsonb({"n": 5}), Jsonb({"n": "x"}), Jsonb({"n": 6})], [1, 4, 2]),
    )
    rows = qconn.execute("SELECT data FROM mbus.consumen('jobs', 'default', 10)").fetchall()
    assert [r["data"]["n"] for r in rows] == ["x", 6, 5]  # no selector: every message
    dead = qconn.execute("SELECT cname, priority FROM mbus.dmq WHERE qname = 'jobs'").fetchall()
    assert dead == [{"cname": "picky", "priority": 4}]
    rows = qconn.execute("SELECT data FROM mbus.consumen('jobs', 'picky', 10)").fetchall()
    assert [r["data"]["n"] for r in rows] == [6, 5]


def test_triggers_copy_the_priority(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.create_queue('copies', 4)")
    qconn.execute("SELECT mbus.create_trigger('jobs', 'copies')")
    qconn.execute("SELECT mbus.post_jobs(%s, priority => 2)", (Jsonb({"n": 1}),))
    qconn.execute("SELECT mbus.post_jobs(%s)", (Jsonb({"n": 2}),))
    postn(qconn, [3, 4], [0, 5])
    assert drain(qconn, "copies") == [4, 1, 2, 3]


def test_bury_max_attempts_and_replay_keep_the_priority(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.post_jobs(%s, priority => 6)", (Jsonb({"n": 1}),))
    qconn.execute("SELECT mbus.post_jobs(%s, priority => 3)", (Jsonb({"n": 2}),))
    leased = qconn.execute(
        "SELECT * FROM mbus.lease_jobs_by_default(1, interval '1 minute')"
    ).fetchall()
    assert ns(leased) == [1]
    qconn.execute("SELECT mbus.bury_jobs(%s, 'bad')", (leased[0]["lease_token"],))
    # n=2 dies of max_attempts: leased once, then a claim with max_attempts 1 buries it
    qconn.execute("SELECT * FROM mbus.lease_jobs_by_default(1, interval '1 second')")
    later = "clock_timestamp() + interval '10 seconds'"
    assert (
        qconn.execute(
            f"SELECT * FROM mbus.lease_jobs_by_default(1, interval '1 minute', 1, {later})"
        ).fetchall()
        == []
    )
    dead = qconn.execute("SELECT dmq_id, priority FROM mbus.dmq ORDER BY dmq_id").fetchall()
    assert [d["priority"] for d in dead] == [6, 3]
    # replayed to its consumer, and posted to the queue anew: both with the priority
    qconn.execute("SELECT mbus.post_jobs(%s)", (Jsonb({"n": 3}),))
    qconn.execute("SELECT mbus.dmq_replay(%s)", (dead[0]["dmq_id"],))
    qconn.execute("SELECT mbus.dmq_replay(%s, 'jobs')", (dead[1]["dmq_id"],))
    assert drain(qconn) == [1, 2, 3]


def test_replay_into_an_unflagged_queue_flags_it(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.post_jobs(%s, priority => 2)", (Jsonb({"n": 1}),))
    lease = "SELECT * FROM mbus.lease_jobs_by_default(1, interval '1 minute')"
    leased = qconn.execute(lease).fetchall()
    qconn.execute("SELECT mbus.bury_jobs(%s, 'bad')", (leased[0]["lease_token"],))
    qconn.execute("UPDATE mbus.queue_segment SET prioritized = false WHERE qname = 'jobs'")
    qconn.execute("SELECT mbus.post_jobs(%s)", (Jsonb({"n": 2}),))
    qconn.execute("SELECT mbus.dmq_replay(dmq_id) FROM mbus.dmq")
    assert drain(qconn) == [1, 2]


def test_the_flag_and_the_order_survive_rotation(autodb: str) -> None:
    with psycopg.connect(autodb, autocommit=True, row_factory=dict_row) as ac:
        ac.execute("UPDATE mbus.queue_segment SET rotate_bytes = 16384, upkeep_every = NULL")
        pad = "x" * 200
        ac.execute(
            "SELECT count(*) FROM mbus.postn_jobs(%s, priority => %s)",
            ([Jsonb({"n": i, "pad": pad}) for i in range(100)], [i % 3 for i in range(100)]),
        )
        report = ac.execute("SELECT mbus.rotate_queue('jobs', 100) AS r").fetchone()
        assert report is not None and report["r"]["rotated"]
        ac.execute(
            "SELECT count(*) FROM mbus.postn_jobs(%s, priority => %s)",
            ([Jsonb({"n": 100 + i}) for i in range(10)], [1] * 10),
        )
        flag = ac.execute("SELECT prioritized FROM mbus.queue_segment WHERE qname = 'jobs'")
        assert flag.fetchone() == {"prioritized": True}
        got = drain(ac)
    expected = sorted(range(110), key=lambda n: (-(n % 3 if n < 100 else 1), n))
    assert got == expected


def test_bus_and_http_shapes_of_batch_priority(autodb: str) -> None:
    with Bus(autodb) as bus:
        bus.post_batch("jobs", [{"n": 1}, {"n": 2}], priority=[0, 4])
        bus.post_batch("jobs", [{"n": 3}, {"n": 4}], priority=2)  # one for all
        with pytest.raises(InvalidArgument, match="priority has 1 elements for 2 messages"):
            bus.post_batch("jobs", [{"n": 5}, {"n": 6}], priority=[1])
        with pytest.raises(InvalidArgument, match=r"not in 0\.\.32767"):
            bus.post_batch("jobs", [{"n": 5}], priority=40000)
        assert [m.data["n"] for m in bus.consume("jobs", limit=10)] == [2, 3, 4, 1]
        assert bus.dmq("jobs") == []
