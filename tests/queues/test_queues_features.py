"""Queue features in SQL: dedupe keys, pause/resume, purge, dmq delete, the seed's consume_after
parameter and the posted/consumed counters. Careless input gets a typed error
and changes nothing."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[dict[str, Any]]


def post(conn: Conn, data: dict[str, Any], queue: str = "jobs", **kw: Any) -> str:
    args = "".join(f", {k} => %({k})s" for k in kw)
    params = {"data": Jsonb(data)} | {
        k: Jsonb(v) if isinstance(v, dict) else v for k, v in kw.items()
    }
    row = conn.execute(f"SELECT mbus.post_{queue}(%(data)s{args}) AS iid", params).fetchone()
    assert row is not None
    return str(row["iid"])


def scalar(conn: Conn, query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return next(iter(row.values()))


def datas(conn: Conn, consumer: str = "default", queue: str = "jobs") -> list[Any]:
    rows = conn.execute("SELECT data FROM mbus.consumen(%s, %s, 100)", (queue, consumer)).fetchall()
    return [r["data"] for r in rows]


def fails(conn: Conn, query: str, params: Any = None) -> psycopg.Error:
    """Run ``query`` in a savepoint that it must fail; returns the error."""
    with pytest.raises(psycopg.Error) as info, conn.transaction():
        conn.execute(query, params)
    return info.value


def depth(conn: Conn, queue: str = "jobs") -> int:
    return int(scalar(conn, f"SELECT count(*) FROM mbus.q_{queue}"))


# --- dedupe key ----------------------------------------------------------------------------------


def test_dedupe_key_keeps_one_pending_message_per_key(qconn: Conn) -> None:
    first = post(qconn, {"n": 1}, dedupe_key="order-42")
    assert post(qconn, {"n": 2}, dedupe_key="order-42") == first
    assert scalar(qconn, "SELECT mbus.post('jobs', '{\"n\": 3}', dedupe_key => 'order-42')") in (
        None,
        "",
    )  # the generic post returns nothing
    other = post(qconn, {"n": 4}, dedupe_key="order-43")
    assert other != first
    assert depth(qconn) == 2
    # consumed: the key is free again, a new message is posted
    assert datas(qconn) == [{"n": 1}, {"n": 4}]
    again = post(qconn, {"n": 5}, dedupe_key="order-42")
    assert again not in (first, other)
    assert datas(qconn) == [{"n": 5}]


def test_dedupe_counts_a_message_pending_while_any_consumer_still_has_it(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.create_consumer('jobs', 'audit')")
    first = post(qconn, {"n": 1}, dedupe_key="k")
    assert datas(qconn, "default") == [{"n": 1}]
    assert post(qconn, {"n": 2}, dedupe_key="k") == first  # audit has not consumed it
    # leased is pending too
    qconn.execute("SELECT * FROM mbus.consume_lease('jobs', 'audit', 1, '1 minute')")
    assert post(qconn, {"n": 3}, dedupe_key="k") == first
    # delayed is pending too
    later = post(qconn, {"n": 4}, dedupe_key="d", delayed_until="2999-01-01T00:00:00Z")
    assert post(qconn, {"n": 5}, dedupe_key="d") == later


def test_a_rolled_back_dedupe_post_leaves_the_key_free(qconn: Conn) -> None:
    with pytest.raises(psycopg.errors.RaiseException), qconn.transaction():
        post(qconn, {"n": 1}, dedupe_key="k")
        qconn.execute("DO $$ BEGIN RAISE EXCEPTION 'app failed'; END $$")
    post(qconn, {"n": 2}, dedupe_key="k")
    assert datas(qconn) == [{"n": 2}]


@pytest.mark.parametrize("key", ["", "x" * 201])
def test_a_bad_dedupe_key_is_refused_and_changes_nothing(qconn: Conn, key: str) -> None:
    n = scalar(qconn, "SELECT last_value FROM mbus.msg_id_seq")
    exc = fails(qconn, "SELECT mbus.post_jobs('{}', dedupe_key => %s)", (key,))
    assert exc.sqlstate == "MB006"
    assert "dedupe_key" in str(exc)
    assert depth(qconn) == 0
    assert scalar(qconn, "SELECT count(*) FROM mbus.queue_dedupe") == 0
    assert scalar(qconn, "SELECT last_value FROM mbus.msg_id_seq") == n


def test_dedupe_clean_drops_only_keys_whose_message_is_gone(qconn: Conn) -> None:
    post(qconn, {"n": 1}, dedupe_key="gone")
    post(qconn, {"n": 2}, dedupe_key="kept", delayed_until="2999-01-01T00:00:00Z")
    datas(qconn)  # consumes "gone" (the other is delayed)
    assert scalar(qconn, "SELECT mbus.dedupe_clean('jobs')") == 1
    keys = [r["dkey"] for r in qconn.execute("SELECT dkey FROM mbus.queue_dedupe")]
    assert keys == ["kept"]
    report = scalar(qconn, "SELECT mbus.maintain()")
    assert report["dedupe_keys_dropped"] == 0 and report["errors"] == {}


def test_concurrent_posts_of_one_key_make_one_message(autodb: str) -> None:
    """The second post waits for the first transaction's end, then returns its iid."""
    with (
        psycopg.connect(autodb, row_factory=dict_row) as a,
        psycopg.connect(autodb, row_factory=dict_row, autocommit=True) as b,
    ):
        first = post(a, {"n": 1}, dedupe_key="k")  # a's transaction stays open
        got: list[str] = []
        worker = threading.Thread(target=lambda: got.append(post(b, {"n": 2}, dedupe_key="k")))
        worker.start()
        time.sleep(0.3)
        assert worker.is_alive()  # waits for the key
        a.commit()
        worker.join(60)
        assert got == [first]
        assert scalar(b, "SELECT count(*) FROM mbus.q_jobs") == 1


# --- consume_after as a named parameter (the seed's pseudocode) ---------------------------------


def test_seed_consume_after_array_parameter(qconn: Conn) -> None:
    """ "book_tiket_to := post('book_tikets', consume_after := array[room_resvr], ...)" """
    room_resvr = post(qconn, {"step": "room"})
    book = scalar(
        qconn,
        'SELECT mbus.post_jobs(\'{"step": "ticket"}\', consume_after := array[%s])',
        (room_resvr,),
    )
    assert scalar(
        qconn, "SELECT consume_after FROM mbus.q_jobs WHERE data->>'step' = 'ticket'"
    ) == [room_resvr]
    # only the room message is claimable until it is consumed (and committed: release at commit)
    assert [
        r["iid"] for r in qconn.execute("SELECT iid FROM mbus.consumen('jobs', 'default', 9)")
    ] == [room_resvr]
    assert book.startswith("jobs.")


def test_seed_consume_after_scalar_parameter_in_plpgsql(qconn: Conn) -> None:
    """ "cancel_room_resvr:= post('cancel_room_reservations', consume_after:=bung_iid, ...)" """
    bung_iid = post(qconn, {"bung": True}, delayed_until="2999-01-01T00:00:00Z")
    qconn.execute(
        "DO $$ DECLARE bung_iid text := %s; BEGIN "
        "PERFORM mbus.post('jobs', '{\"cancel\": 1}', consume_after := bung_iid); END $$".replace(
            "%s", "'" + bung_iid + "'"
        )
    )
    row = qconn.execute(
        "SELECT consume_after, headers->'consume_after' AS h, vt::text AS vt FROM mbus.q_jobs "
        "WHERE data ? 'cancel'"
    ).fetchone()
    assert row is not None
    assert row["consume_after"] == [bung_iid] and row["h"] == [bung_iid]
    assert row["vt"] == "infinity"  # waits for the bung


def test_consume_after_parameter_merges_with_headers(qconn: Conn) -> None:
    a = post(qconn, {"n": "a"}, delayed_until="2999-01-01T00:00:00Z")
    b = post(qconn, {"n": "b"}, delayed_until="2999-01-01T00:00:00Z")
    # from a driver, a list goes as text[] (an untyped array literal would be one text iid)
    qconn.execute(
        'SELECT mbus.post_jobs(\'{"n": "c"}\', %s, consume_after => %s::text[])',
        (Jsonb({"consume_after": [a]}), [b]),
    )
    got = scalar(qconn, "SELECT consume_after FROM mbus.q_jobs WHERE data->>'n' = 'c'")
    assert sorted(got) == sorted([a, b])


@pytest.mark.parametrize("value", ["5", "array[1, 2]", "'{\"a\": 1}'::jsonb"])
def test_a_bad_consume_after_is_refused(qconn: Conn, value: str) -> None:
    exc = fails(qconn, f"SELECT mbus.post_jobs('{{}}', consume_after => {value})")
    assert exc.sqlstate == "MB005" and "consume_after" in str(exc)
    assert depth(qconn) == 0


# --- pause and resume -----------------------------------------------------------------------------


def test_a_paused_queue_accepts_posts_and_gives_nothing_until_resumed(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.create_consumer('jobs', 'audit')")
    assert scalar(qconn, "SELECT mbus.pause_queue('jobs')") is True
    assert scalar(qconn, "SELECT mbus.pause_queue('jobs')") is False  # already
    post(qconn, {"n": 1})
    post(qconn, {"n": 2})
    assert datas(qconn, "default") == [] and datas(qconn, "audit") == []
    assert qconn.execute("SELECT * FROM mbus.consume('jobs')").fetchall() == []
    assert (
        qconn.execute("SELECT * FROM mbus.consume_lease('jobs', 'audit', 5, '1 minute')").fetchall()
        == []
    )
    stats = {r["cname"]: r for r in qconn.execute("SELECT * FROM mbus.queue_stats('jobs')")}
    assert stats["default"]["paused"] and stats["default"]["ready"] == 2
    assert scalar(qconn, "SELECT mbus.resume_queue('jobs')") is True
    assert scalar(qconn, "SELECT mbus.resume_queue('jobs')") is False
    assert datas(qconn, "default") == [{"n": 1}, {"n": 2}]


def test_pausing_one_consumer_leaves_the_others(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.create_consumer('jobs', 'audit')")
    qconn.execute("SELECT mbus.pause_queue('jobs', 'audit')")
    post(qconn, {"n": 1})
    assert datas(qconn, "audit") == []
    assert datas(qconn, "default") == [{"n": 1}]
    # take by iid is not a claim: it still works on a paused consumer
    iid = post(qconn, {"n": 2})
    assert qconn.execute("SELECT * FROM mbus.take_from('jobs', 'audit', %s)", (iid,)).fetchall()
    qconn.execute("SELECT mbus.resume_queue('jobs', 'audit')")
    assert datas(qconn, "audit") == [{"n": 1}]


@pytest.mark.parametrize(
    ("call", "state"),
    [
        ("SELECT mbus.pause_queue('nope')", "MB002"),
        ("SELECT mbus.pause_queue('jobs', 'nope')", "MB002"),
        ("SELECT mbus.pause_queue('Bad Name')", "MB001"),
        ("SELECT mbus.resume_queue('jobs', 'nope')", "MB002"),
        ("SELECT mbus.purge_queue('nope')", "MB002"),
        ("SELECT mbus.purge_queue('jobs', 'nope')", "MB002"),
        ("SELECT mbus.dmq_delete(987654)", "MB002"),
        ("SELECT mbus.dmq_delete(NULL)", "MB006"),
    ],
)
def test_careless_calls_get_a_typed_error_and_change_nothing(
    qconn: Conn, call: str, state: str
) -> None:
    post(qconn, {"n": 1})
    assert fails(qconn, call).sqlstate == state
    assert scalar(qconn, "SELECT count(*) FROM mbus.queue_pause") == 0
    assert depth(qconn) == 1


# --- purge ---------------------------------------------------------------------------------------


def test_purge_deletes_pending_deliveries_but_not_leased_ones(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.create_consumer('jobs', 'audit')")
    for n in range(3):
        post(qconn, {"n": n})
    post(qconn, {"n": 9}, delayed_until="2999-01-01T00:00:00Z")
    [leased] = qconn.execute(
        "SELECT lease_token FROM mbus.consume_lease('jobs', 'default', 1, '1 minute')"
    ).fetchall()
    assert scalar(qconn, "SELECT mbus.purge_queue('jobs', 'audit')") == 4
    assert datas(qconn, "audit") == []
    assert scalar(qconn, "SELECT mbus.purge_queue('jobs')") == 3  # default's, not the leased one
    assert depth(qconn) == 1
    qconn.execute("SELECT mbus.ack('jobs', %s)", (leased["lease_token"],))
    assert depth(qconn) == 0
    counters = {r["cname"]: r for r in qconn.execute("SELECT * FROM mbus.queue_counters('jobs')")}
    assert counters["audit"]["consumed"] == 0  # purged is not consumed


# --- the dead-message queue -----------------------------------------------------------------------


def test_dmq_delete_removes_one_dead_message(qconn: Conn) -> None:
    post(qconn, {"n": 1})
    post(qconn, {"n": 2})
    tokens = [
        r["lease_token"]
        for r in qconn.execute(
            "SELECT lease_token FROM mbus.consume_lease('jobs', 'default', 2, '1 minute')"
        )
    ]
    ids = [scalar(qconn, "SELECT mbus.bury('jobs', %s, 'bad')", (t,)) for t in tokens]
    assert scalar(qconn, "SELECT mbus.dmq_delete(%s)", (ids[0],)) == "jobs"
    assert [r["dmq_id"] for r in qconn.execute("SELECT dmq_id FROM mbus.dmq")] == [ids[1]]
    assert fails(qconn, "SELECT mbus.dmq_delete(%s)", (ids[0],)).sqlstate == "MB002"


# --- counters -------------------------------------------------------------------------------------


def totals(conn: Conn) -> dict[str | None, tuple[int, int]]:
    return {
        r["cname"]: (r["posted"], r["consumed"])
        for r in conn.execute("SELECT * FROM mbus.queue_totals WHERE qname = 'jobs'")
    }


def test_counters_count_posts_deliveries_and_consumes(qconn: Conn) -> None:
    qconn.execute("SELECT mbus.create_consumer('jobs', 'vip', $$t.data ? 'vip'$$)")
    post(qconn, {"n": 1})
    post(qconn, {"n": 2, "vip": True})
    first = post(qconn, {"n": 3}, dedupe_key="k")
    assert post(qconn, {"n": 4}, dedupe_key="k") == first  # not posted: not counted
    qconn.execute(
        "SELECT mbus.post_batch('jobs', ARRAY['{\"n\": 5}', '{\"n\": 6, \"vip\": 1}']::jsonb[])"
    )
    assert totals(qconn) == {None: (5, 0), "default": (5, 0), "vip": (2, 0)}
    assert len(datas(qconn, "default")) == 5
    [lease] = qconn.execute(
        "SELECT lease_token FROM mbus.consume_lease('jobs', 'vip', 1, '1 minute')"
    ).fetchall()
    assert totals(qconn)["vip"] == (2, 0)  # a lease counts at its ack
    qconn.execute("SELECT mbus.ack('jobs', %s)", (lease["lease_token"],))
    assert totals(qconn) == {None: (5, 6), "default": (5, 5), "vip": (2, 1)}
    stats = {r["cname"]: r for r in qconn.execute("SELECT * FROM mbus.queue_stats('jobs')")}
    assert (stats["vip"]["posted"], stats["vip"]["consumed"]) == (2, 1)


@pytest.mark.parametrize("second_consumer", [False, True], ids=["one-consumer", "two"])
def test_a_batch_returns_iids_in_order_and_counts_them(qconn: Conn, second_consumer: bool) -> None:
    """postn_<q>: iids in the order of data, the rows as given (headers stamped, priorities),
    one delivery per consumer, and the counters of the queue and of each consumer."""
    if second_consumer:
        qconn.execute("SELECT mbus.create_consumer('jobs', 'audit')")
    data = [Jsonb({"n": n}) for n in range(1, 8)]
    headers = [None, Jsonb({"trace": "t2"})] + [None] * 5
    priority = [0, 0, 3, 0, 0, 0, 0]
    iids = [
        r["iid"]
        for r in qconn.execute(
            "SELECT iid FROM mbus.post_batch('jobs', %s, %s, priority => %s) AS iid",
            (data, headers, priority),
        )
    ]
    ids = [int(iid.split(".")[1].split("@")[0]) for iid in iids]
    assert ids == sorted(ids) and len(set(ids)) == 7  # in the order of data
    stored = {
        r["id"]: r
        for r in qconn.execute(
            "SELECT q.id, q.data, q.headers, q.priority FROM mbus.q_jobs AS q"
            " JOIN mbus.consumer AS c ON c.cid = q.c AND c.qname = 'jobs' AND c.cname = 'default'"
        )
    }
    assert [stored[i]["data"] for i in ids] == [{"n": n} for n in range(1, 8)]
    assert stored[ids[1]]["headers"]["trace"] == "t2"  # stamped and stored
    assert stored[ids[0]]["headers"] is None  # default headers are not stored
    assert [stored[i]["priority"] for i in ids] == priority
    consumers = ["default", "audit"] if second_consumer else ["default"]
    assert totals(qconn) == {None: (7, 0)} | {c: (7, 0) for c in consumers}
    for consumer in consumers:
        assert [d["n"] for d in datas(qconn, consumer)] == [3, 1, 2, 4, 5, 6, 7]
    assert totals(qconn)[None] == (7, 7 * len(consumers))


def test_a_rolled_back_post_still_counts_like_a_prometheus_counter(qconn: Conn) -> None:
    with pytest.raises(psycopg.errors.RaiseException), qconn.transaction():
        post(qconn, {"n": 1})
        qconn.execute("DO $$ BEGIN RAISE EXCEPTION 'app failed'; END $$")
    assert depth(qconn) == 0
    assert totals(qconn)[None] == (1, 0)


def test_counter_sequences_follow_consumers_and_the_queue(qconn: Conn) -> None:
    def seqs() -> set[str]:
        return {
            r["relname"]
            for r in qconn.execute(
                "SELECT relname FROM pg_class WHERE relkind = 'S' AND relname LIKE 'q\\_jobs$%%'"
            )
        }

    qconn.execute("SELECT mbus.create_consumer('jobs', 'audit')")
    cid = scalar(qconn, "SELECT cid FROM mbus.consumer WHERE cname = 'audit'")
    assert f"q_jobs$c{cid}$consumed" in seqs()
    qconn.execute("SELECT mbus.drop_consumer('jobs', 'audit')")
    assert not any(f"$c{cid}$" in s for s in seqs())
    assert "q_jobs$posted" in seqs()
    qconn.execute("SELECT mbus.drop_queue('jobs')")
    assert seqs() == set()
