"""Integrity of queues: no careless or hostile input loses, duplicates or
blocks a message. Each test failed on main before the fix it pins (noted in its docstring)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row
from typer.testing import CliRunner

from pgmbus.cli import app

Conn = psycopg.Connection[dict[str, Any]]


def scalar(conn: Conn, query: str, *args: Any) -> Any:
    row = conn.execute(query, args).fetchone()
    assert row is not None
    return next(iter(row.values()))


def fails(conn: Conn, query: str, *args: Any) -> psycopg.Error:
    """Run query in a savepoint that must fail; return the error (the transaction goes on)."""
    conn.execute("SAVEPOINT fails")
    try:
        conn.execute(query, args)
    except psycopg.Error as exc:
        conn.execute("ROLLBACK TO SAVEPOINT fails")
        return exc
    raise AssertionError(f"{query} did not fail")


def message(exc: psycopg.Error) -> str:
    return exc.diag.message_primary or ""


@pytest.fixture
def admin(db_dsn: str) -> Iterator[Conn]:
    with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as c:
        yield c


def connect(dsn: str, **kw: Any) -> Conn:
    return psycopg.connect(dsn, row_factory=dict_row, **kw)


def session_ended(admin: Conn, other: Conn) -> None:
    """Close other and wait until its backend is gone (clear_tempq looks at pg_stat_activity)."""
    pid = other.info.backend_pid
    other.close()
    for _ in range(100):
        if not scalar(admin, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", pid):
            return
        time.sleep(0.02)
    raise AssertionError("the session did not end")


# --- 1. generated names are one-to-one -----------------------------------------------------------


def test_generated_names_of_two_consumers_never_collide(qconn: Conn) -> None:
    """Main: queue a consumer b_by_c and queue a_by_b consumer c both made consume_a_by_b_by_c."""
    qconn.execute("SELECT mbus.create_queue('a', 1)")
    qconn.execute("SELECT mbus.create_consumer('a', 'b_by_c')")
    qconn.execute("SELECT mbus.create_queue('a_by_b', 1)")
    exc = fails(qconn, "SELECT mbus.create_consumer('a_by_b', 'c')")
    assert exc.sqlstate == "MB003"
    assert "consumer c of queue a_by_b" in message(exc)
    assert "consumer b_by_c of queue a" in message(exc)
    assert "consume_a_by_b_by_c" in message(exc)
    assert not scalar(
        qconn, "SELECT count(*) FROM mbus.consumer WHERE qname = 'a_by_b' AND cname = 'c'"
    )
    # the consumer of a still reads its own queue only
    qconn.execute('SELECT mbus.post_a_by_b(\'{"q": "a_by_b"}\')')
    qconn.execute('SELECT mbus.post_a(\'{"q": "a"}\')')
    got = qconn.execute("SELECT data FROM mbus.consumen('a', 'b_by_c', 10)").fetchall()
    assert got == [{"data": {"q": "a"}}]


def test_a_queue_may_not_take_a_name_of_the_mbus_schema(qconn: Conn) -> None:
    """Main: queue 'dmq' was accepted and made post_dmq beside the static mbus.post_dmq."""
    n = scalar(qconn, "SELECT count(*) FROM pg_proc WHERE pronamespace = 'mbus'::regnamespace")
    exc = fails(qconn, "SELECT mbus.create_queue('dmq', 1)")
    assert exc.sqlstate == "MB003"
    assert "queue dmq" in message(exc) and "mbus.post_dmq" in message(exc)
    assert not scalar(qconn, "SELECT count(*) FROM mbus.queue WHERE qname = 'dmq'")
    assert n == scalar(
        qconn, "SELECT count(*) FROM pg_proc WHERE pronamespace = 'mbus'::regnamespace"
    )


def test_a_queue_may_not_take_another_queues_relation_name(qconn: Conn) -> None:
    """Main: queue 'jobs_claim' collided with the index mbus.q_jobs_claim (a plain SQL error)."""
    exc = fails(qconn, "SELECT mbus.create_queue('jobs_claim', 1)")
    assert exc.sqlstate == "MB003"
    assert "queue jobs_claim" in message(exc) and "queue jobs" in message(exc)


def test_generated_names_list_exactly_what_the_generator_makes(qconn: Conn) -> None:
    """One place computes the names: the functions made are those mbus.generated_names lists."""
    qconn.execute("SELECT mbus.create_consumer('jobs', 'vip', $$t.data ? 'v'$$)")
    made = {
        r["proname"]
        for r in qconn.execute(
            "SELECT proname FROM pg_proc WHERE pronamespace = 'mbus'::regnamespace "
            "AND proname ~ '^[a-z_]+_jobs($|_by_)'"
        )
    }
    listed = {
        r["name"]
        for r in qconn.execute(
            "SELECT g.name FROM mbus.consumer AS c, mbus.generated_names('jobs', c.cname) AS g "
            "WHERE c.qname = 'jobs' AND g.kind = 'function' "
            "UNION SELECT name FROM mbus.generated_names('jobs') WHERE kind = 'function'"
        )
    }
    assert made == listed
    rels = {
        r["relname"]
        for r in qconn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'mbus'::regnamespace "
            "AND relname LIKE 'q\\_jobs%%'"
        )
    }
    assert rels == {
        r["name"]
        for r in qconn.execute(
            "SELECT name FROM mbus.generated_names('jobs') WHERE kind = 'relation'"
        )
    }


# --- 2. temporary names are reserved -------------------------------------------------------------


def test_temporary_queue_never_takes_a_user_queue(admin: Conn, db_dsn: str) -> None:
    """Main: create_temporary_queue() returned the user's queue tq_<n>; clear_tempq dropped it."""
    n = scalar(admin, "SELECT nextval('mbus.temp_seq')")
    admin.execute(sql.SQL("SELECT mbus.create_queue({}, 1)").format(sql.Literal(f"tq_{n + 1}")))
    admin.execute(
        sql.SQL("SELECT mbus.post({}, '{{\"keep\": 1}}')").format(sql.Literal(f"tq_{n + 1}"))
    )
    other = connect(db_dsn, autocommit=True)
    temp = scalar(other, "SELECT mbus.create_temporary_queue()")
    tc = scalar(other, "SELECT mbus.create_temporary_consumer(%s)", f"tq_{n + 1}")
    session_ended(admin, other)
    assert temp != f"tq_{n + 1}"
    assert tc.startswith("tc_")
    assert scalar(admin, "SELECT mbus.clear_tempq()") == 2
    assert scalar(admin, "SELECT count(*) FROM mbus.queue WHERE qname = %s", temp) == 0
    assert scalar(admin, f"SELECT count(*) FROM mbus.q_tq_{n + 1}") == 1


def test_temporary_consumer_skips_a_taken_name(admin: Conn, db_dsn: str) -> None:
    """Main: create_temporary_consumer failed (MB003) when tc_<n> was a user's consumer."""
    n = scalar(admin, "SELECT nextval('mbus.temp_seq')")
    admin.execute("SELECT mbus.create_queue('jobs', 1)")
    admin.execute(
        sql.SQL("SELECT mbus.create_consumer('jobs', {})").format(sql.Literal(f"tc_{n + 1}"))
    )
    other = connect(db_dsn, autocommit=True)
    tc = scalar(other, "SELECT mbus.create_temporary_consumer('jobs')")
    session_ended(admin, other)
    assert tc != f"tc_{n + 1}"
    assert scalar(admin, "SELECT mbus.clear_tempq()") == 1
    assert scalar(admin, "SELECT count(*) FROM mbus.consumer WHERE cname = %s", f"tc_{n + 1}") == 1


def test_clear_tempq_drops_only_the_object_it_made(admin: Conn, db_dsn: str) -> None:
    """A temporary queue dropped by hand and made again by a user under its name survives
    clear_tempq (a guard: main passes too, drop_queue forgets the record; temp_object.obj_id
    keeps a record that outlives its object from dropping a namesake)."""
    other = connect(db_dsn, autocommit=True)
    temp = scalar(other, "SELECT mbus.create_temporary_queue()")
    other.execute(sql.SQL("SELECT mbus.drop_queue({})").format(sql.Literal(temp)))
    admin.execute(sql.SQL("SELECT mbus.create_queue({}, 1)").format(sql.Literal(temp)))
    admin.execute(sql.SQL("SELECT mbus.post({}, '{{\"mine\": 1}}')").format(sql.Literal(temp)))
    session_ended(admin, other)
    admin.execute("SELECT mbus.clear_tempq()")
    assert scalar(admin, "SELECT count(*) FROM mbus.queue WHERE qname = %s", temp) == 1
    assert scalar(admin, f"SELECT count(*) FROM mbus.q_{temp}") == 1
    assert scalar(admin, "SELECT count(*) FROM mbus.temp_object") == 0


# --- 3. client iids ------------------------------------------------------------------------------


def test_posting_a_pending_iid_again_is_idempotent(qconn: Conn) -> None:
    """Main: the same iid posted twice stored two messages; take(iid) deleted both, returned one."""
    iid = scalar(qconn, "SELECT mbus.get_iid('jobs')")
    assert scalar(qconn, "SELECT mbus.post_jobs('{\"n\": 1}', iid => %s)", iid) == iid
    assert scalar(qconn, "SELECT mbus.post_jobs('{\"n\": 2}', iid => %s)", iid) == iid
    assert scalar(qconn, "SELECT count(*) FROM mbus.q_jobs") == 1
    taken = qconn.execute("SELECT data FROM mbus.take(%s)", (iid,)).fetchall()
    assert taken == [{"data": {"n": 1}}]
    assert scalar(qconn, "SELECT count(*) FROM mbus.q_jobs") == 0
    # a client's own iid likewise; posting it again after another transaction consumed it
    # stores nothing either (within queues.iid_window: tests/queues/test_queues_iid_window.py;
    # in the consuming transaction itself it is a re-post, stored:
    # tests/adversarial/test_queue_promises.py)
    assert scalar(qconn, "SELECT mbus.post_jobs('{\"n\": 3}', iid => 'order-7')") == "order-7"
    assert scalar(qconn, "SELECT mbus.post_jobs('{\"n\": 4}', iid => 'order-7')") == "order-7"
    got = qconn.execute("SELECT iid, data FROM mbus.consumen('jobs', 'default', 10)").fetchall()
    assert got == [{"iid": "order-7", "data": {"n": 3}}]
    qconn.execute("UPDATE mbus.client_iids SET consumed_in = NULL")  # as if consumed elsewhere
    qconn.execute("SELECT mbus.post_jobs('{\"n\": 5}', iid => 'order-7')")
    assert scalar(qconn, "SELECT count(*) FROM mbus.q_jobs") == 0


def test_take_removes_no_more_than_it_returns(qconn: Conn) -> None:
    """Two pending messages sharing a client iid (e.g. posted before this rule): take_from and
    take_<q> remove only the message they return."""
    qconn.execute("SELECT mbus.post_jobs('{\"n\": 1}', iid => 'dup')")
    qconn.execute(
        "INSERT INTO mbus.q_jobs (c, vt, id, iid, added, data) "
        "SELECT c, vt, nextval('mbus.msg_id_seq'), iid, added, '{\"n\": 2}' FROM mbus.q_jobs"
    )
    taken = qconn.execute("SELECT data FROM mbus.take_jobs('dup')").fetchall()
    assert taken == [{"data": {"n": 1}}]
    assert scalar(qconn, "SELECT count(*) FROM mbus.q_jobs") == 1


def test_a_forged_generated_iid_is_refused(qconn: Conn) -> None:
    """Main: 'jobs.<n>@db' ahead of the sequence was stored as id n, and the real post n later
    shared it (take and peek found both)."""
    db = scalar(qconn, "SELECT current_database()")
    last = scalar(qconn, "SELECT nextval('mbus.msg_id_seq')")
    for forged in (f"jobs.{last + 5}@{db}", f"jobs.0{last}@{db}", f"other.{last + 5}@{db}", ""):
        exc = fails(qconn, "SELECT mbus.post_jobs('{}', iid => %s)", forged)
        assert exc.sqlstate == "MB006", forged
    assert scalar(qconn, "SELECT count(*) FROM mbus.q_jobs") == 0
    # an iid of another database or a plain text is the client's own
    qconn.execute("SELECT mbus.post_jobs('{}', iid => %s)", (f"jobs.{last + 5}@elsewhere",))
    assert scalar(qconn, "SELECT count(*) FROM mbus.q_jobs") == 1


def test_concurrent_posts_of_one_iid_store_one_message(autodb: str) -> None:
    """Main: two transactions posting the same iid at once both stored it."""
    with connect(autodb) as a, connect(autodb) as b:
        assert scalar(a, "SELECT mbus.post_jobs('{\"by\": \"a\"}', iid => 'k-1')") == "k-1"
        result: list[Any] = []

        def second() -> None:
            result.append(scalar(b, "SELECT mbus.post_jobs('{\"by\": \"b\"}', iid => 'k-1')"))
            b.commit()

        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.3)
        assert t.is_alive(), "the second post must wait for the first transaction"
        a.commit()
        t.join(10)
        assert result == ["k-1"]
        rows = a.execute("SELECT data FROM mbus.q_jobs").fetchall()
        assert rows == [{"data": {"by": "a"}}]
        a.commit()


# --- 4. a failing selector never fails the post --------------------------------------------------


def test_a_failing_selector_sends_that_consumers_copy_to_the_dmq(qconn: Conn) -> None:
    """Main: every post to the queue failed with 22P02/22012, naming no consumer."""
    qconn.execute("SELECT mbus.create_consumer('jobs', 'big', $$(t.properties->>'k')::int > 5$$)")
    qconn.execute("SELECT mbus.create_consumer('jobs', 'div', $$1 / (t.data->>'n')::int = 1$$)")
    iid = scalar(qconn, 'SELECT mbus.post_jobs(\'{"n": 0}\', NULL, \'{"k": "x"}\')')
    qconn.execute('SELECT mbus.post_jobs(\'{"n": 1}\', NULL, \'{"k": "9"}\')')
    counts = {
        r["cname"]: r["n"]
        for r in qconn.execute(
            "SELECT c.cname, count(q.c) AS n FROM mbus.consumer c "
            "LEFT JOIN mbus.q_jobs q ON q.c = c.cid WHERE c.qname = 'jobs' GROUP BY c.cname"
        )
    }
    assert counts == {"default": 2, "big": 1, "div": 1}
    dead = qconn.execute("SELECT cname, iid, reason FROM mbus.dmq ORDER BY cname").fetchall()
    assert [(d["cname"], d["iid"]) for d in dead] == [("big", iid), ("div", iid)]
    assert "consumer big" in dead[0]["reason"] and "invalid input syntax" in dead[0]["reason"]
    assert "consumer div" in dead[1]["reason"] and "division by zero" in dead[1]["reason"]
    stats = {
        r["cname"]: (r["selector_errors"], r["dmq"])
        for r in qconn.execute("SELECT * FROM mbus.queue_metrics WHERE qname = 'jobs'")
    }
    assert stats == {"default": (0, 0), "big": (1, 1), "div": (1, 1)}


def test_a_failing_selector_in_a_batch_and_a_trigger(qconn: Conn) -> None:
    """Main: post_batch failed as a whole; a trigger selector error failed the source post."""
    qconn.execute("SELECT mbus.create_consumer('jobs', 'big', $$(t.properties->>'k')::int > 5$$)")
    qconn.execute("SELECT mbus.create_queue('audit', 1)")
    qconn.execute("SELECT mbus.create_trigger('jobs', 'audit', $$(t.data->>'a')::int = 1$$)")
    iids = [
        r["iid"]
        for r in qconn.execute(
            "SELECT iid FROM mbus.post_batch('jobs', %s::jsonb[], NULL, %s::jsonb[]) AS p(iid)",
            (['{"a": "1"}', '{"a": "z"}'], ['{"k": "7"}', '{"k": "no"}']),
        )
    ]
    assert len(iids) == 2
    assert scalar(qconn, "SELECT count(*) FROM mbus.q_jobs") == 3  # 2 default + 1 big
    assert scalar(qconn, "SELECT count(*) FROM mbus.q_audit") == 1
    dead = qconn.execute("SELECT qname, cname, iid, reason FROM mbus.dmq ORDER BY qname").fetchall()
    assert [(d["qname"], d["cname"], d["iid"]) for d in dead] == [
        ("audit", None, iids[1]),
        ("jobs", "big", iids[1]),
    ]
    assert "trigger jobs -> audit" in dead[0]["reason"]
    assert scalar(qconn, "SELECT selector_errors FROM mbus.queue_trigger") == 1


def test_check_selector_ignores_a_session_table_named_t(qconn: Conn) -> None:
    """With a temporary table t in the session every selector was
    refused with MB004 'relation t already exists'."""
    qconn.execute("CREATE TEMPORARY TABLE t (x int)")
    qconn.execute("SELECT mbus.create_consumer('jobs', 'sel', $$t.data ? 'x'$$)")
    assert fails(qconn, "SELECT mbus.check_selector('now() > t.added')").sqlstate == "MB004"
    assert scalar(qconn, "SELECT count(*) FROM pg_indexes WHERE tablename = 't'") == 0


def test_a_selector_names_columns_through_t_as_the_post_sees_them(qconn: Conn) -> None:
    """Main: `id > 0` passed the check and sent every copy of that consumer to the dmq
    ("column id does not exist" at post time); `iid IS NOT NULL` meant the post's iid
    parameter and matched nothing. Both are refused now; through t they work."""
    for selector in ("id > 0", "iid IS NOT NULL", "headers ? 'x'", "attempts = 0"):
        exc = fails(qconn, "SELECT mbus.create_consumer('jobs', 'sel', %s)", selector)
        assert exc.sqlstate == "MB004" and "mbus_selector_" not in message(exc), selector
    qconn.execute("SELECT mbus.create_consumer('jobs', 'byid', 't.id > 0')")
    qconn.execute("SELECT mbus.create_consumer('jobs', 'byiid', 't.iid IS NOT NULL')")
    qconn.execute("SELECT mbus.post_jobs('{}')")
    assert scalar(qconn, "SELECT count(*) FROM mbus.dmq WHERE qname = 'jobs'") == 0
    rows = qconn.execute("SELECT iid FROM mbus.consume('jobs', 'byid')").fetchall()
    assert len(rows) == 1
    rows = qconn.execute("SELECT iid FROM mbus.consume('jobs', 'byiid')").fetchall()
    assert len(rows) == 1


# --- 5. undeliverable posts are refused ----------------------------------------------------------


def test_a_post_that_could_never_be_delivered_is_refused(qconn: Conn) -> None:
    """Main: these posts returned an iid (and the first stored nothing)."""
    exc = fails(qconn, "SELECT mbus.post_jobs('{}', expires => now() - interval '1 second')")
    assert exc.sqlstate == "MB006" and "expires" in message(exc)
    exc = fails(
        qconn,
        "SELECT mbus.post_jobs('{}', delayed_until => now() + interval '2 hours',"
        " expires => now() + interval '1 hour')",
    )
    assert exc.sqlstate == "MB006" and "delayed_until" in message(exc)
    exc = fails(
        qconn,
        "SELECT mbus.post_batch('jobs', ARRAY['{}']::jsonb[], NULL, NULL, NULL, now())",
    )
    assert exc.sqlstate == "MB006"
    qconn.execute("SELECT mbus.drop_consumer('jobs', 'default')")
    exc = fails(qconn, "SELECT mbus.post_jobs('{}')")
    assert exc.sqlstate == "MB008" and "has no consumer" in message(exc)
    assert fails(qconn, "SELECT mbus.post_batch('jobs', ARRAY['{}']::jsonb[])").sqlstate == "MB008"
    # a queue without consumers that copies to another queue still delivers
    qconn.execute("SELECT mbus.create_queue('audit', 1)")
    qconn.execute("SELECT mbus.create_trigger('jobs', 'audit')")
    qconn.execute("SELECT mbus.post_jobs('{}')")
    assert scalar(qconn, "SELECT count(*) FROM mbus.q_audit") == 1


def test_cli_post_of_an_undeliverable_message_exits_non_zero(autodb: str) -> None:
    """Main: `pgmbus queue post --ttl -1` printed an iid and exited 0."""
    runner = CliRunner()
    for extra in (["--ttl=-1"], ["--delay=10", "--ttl=5"]):
        result = runner.invoke(app, ["queue", "post", "jobs", "{}", *extra, "--dsn", autodb])
        assert result.exit_code == 1, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
        assert "in the past" in result.output or "not before expires" in result.output
    with connect(autodb) as c:
        assert scalar(c, "SELECT count(*) FROM mbus.q_jobs") == 0


# --- 6. the security flag of an existing queue ---------------------------------------------------


def test_create_queue_never_ignores_the_security_model(qconn: Conn) -> None:
    """Main: create_queue('jobs', 1, true) on a plain queue succeeded and changed nothing."""
    exc = fails(qconn, "SELECT mbus.create_queue('jobs', 1, true)")
    assert exc.sqlstate == "MB003" and "is_roles_security_model" in message(exc)
    qconn.execute("SELECT mbus.create_queue('jobs', 2, false)")
    qconn.execute("SELECT mbus.create_queue('sec', 1, true)")
    assert fails(qconn, "SELECT mbus.create_queue('sec', 1)").sqlstate == "MB003"
    qconn.execute("SELECT mbus.create_queue('sec', 1, true)")
    assert scalar(qconn, "SELECT ncons FROM mbus.queue WHERE qname = 'jobs'") == 2


# --- 7. a view's INSERT ... RETURNING iid with the documented grant ------------------------------


def test_view_insert_returning_iid_with_only_the_insert_grant(admin: Conn, db_dsn: str) -> None:
    """Main: permission denied for view jobs_q (RETURNING needs SELECT on the column)."""
    admin.execute("SELECT mbus.create_queue('jobs', 1)")
    admin.execute("SELECT mbus.create_view('jobs')")
    admin.execute("CREATE ROLE integrity_poster LOGIN")
    try:
        admin.execute("GRANT INSERT ON public.jobs_q TO integrity_poster")
        dsn = make_conninfo("", **(conninfo_to_dict(db_dsn) | {"user": "integrity_poster"}))
        with connect(dsn, autocommit=True) as c:
            assert scalar(c, "SELECT current_user") == "integrity_poster"
            iid = scalar(c, "INSERT INTO public.jobs_q (data) VALUES ('{\"n\": 1}') RETURNING iid")
            assert iid.startswith("jobs.")
            # the column grant RETURNING needs lists nothing
            assert c.execute("SELECT iid FROM public.jobs_q").fetchall() == []
        assert admin.execute("SELECT iid FROM public.jobs_q").fetchall() == [{"iid": iid}]
    finally:
        admin.execute("DROP OWNED BY integrity_poster")
        admin.execute("DROP ROLE integrity_poster")


# --- 8. expiry in the storage upkeep -------------------------------------------------------------


def test_rotate_queue_deletes_expired_messages_and_truncates_their_segment(autodb: str) -> None:
    """Main: an expired row stayed until clear_queue and kept its segment from being truncated."""
    with connect(autodb, autocommit=True) as c:
        c.execute("SELECT mbus.post_jobs('{}', expires => now() + interval '1 hour')")
        c.execute("SELECT mbus.post_jobs('{\"live\": 1}')")
        c.execute("UPDATE mbus.queue_segment SET rotate_bytes = 1 WHERE qname = 'jobs'")
        assert scalar(c, "SELECT mbus.rotate_queue('jobs')")["current"] == 2
        assert len(c.execute("SELECT * FROM mbus.consumen('jobs', 'default', 1)").fetchall()) == 1
        c.execute("UPDATE mbus.q_jobs SET expires = now() - interval '1 second'")
        report = scalar(c, "SELECT mbus.rotate_queue('jobs')")
        assert report["expired"] == 1
        assert 1 in report["truncated"], report
        assert scalar(c, "SELECT count(*) FROM mbus.q_jobs") == 0
        assert scalar(c, "SELECT count(*) FROM mbus.dmq") == 0  # the original API: deleted


def test_rotate_queues_rotates_every_queue(autodb: str) -> None:
    """Once one queue's rotation wrote, the queues after it were
    skipped as 'not a transaction of its own'."""
    with connect(autodb, autocommit=True) as c:
        for q in ("jobs", "zed"):
            if q != "jobs":
                c.execute(sql.SQL("SELECT mbus.create_queue({}, 1)").format(sql.Literal(q)))
            c.execute(sql.SQL("SELECT mbus.post({}, '{{}}')").format(sql.Literal(q)))
            c.execute("UPDATE mbus.queue_segment SET rotate_bytes = 1 WHERE qname = %s", (q,))
        first = scalar(c, "SELECT mbus.rotate_queues()")
        assert {q: r["current"] for q, r in first.items()} == {"jobs": 2, "zed": 2}, first
        c.execute("SELECT * FROM mbus.consumen('jobs', 'default', 5)")
        c.execute("SELECT * FROM mbus.consumen('zed', 'default', 5)")
        second = scalar(c, "SELECT mbus.rotate_queues()")
        assert {q: r["truncated"] for q, r in second.items()} == {"jobs": [1], "zed": [1]}, second


# --- found while writing the headers -------------------------------------------------------------


def test_lease_returns_its_batch_in_claim_order(qconn: Conn) -> None:
    """lease returned the parking segment's rows first."""
    qconn.execute("SELECT mbus.post_jobs('{\"n\": 2}', delayed_until => now() + interval '2 min')")
    qconn.execute("SELECT mbus.post_jobs('{\"n\": 1}')")
    rows = qconn.execute(
        "SELECT data FROM mbus.consume_lease('jobs', 'default', 5, '1 min', NULL,"
        " now() + interval '3 min')"
    ).fetchall()
    assert [r["data"]["n"] for r in rows] == [1, 2]


def test_bury_consume_wait_and_clear_queue_are_public_entry_points(qconn: Conn) -> None:
    """bury, consume_wait and clear_queue were not listed."""
    points = scalar(qconn, "SELECT mbus.public_entry_points()")
    for f in ("bury", "consume_wait", "clear_queue"):
        assert any(p.startswith(f"mbus.{f}(") for p in points), f
        assert scalar(
            qconn,
            "SELECT bool_and(has_function_privilege('public', p.oid, 'EXECUTE')) FROM pg_proc p "
            "WHERE p.pronamespace = 'mbus'::regnamespace AND p.proname = %s",
            f,
        )


def test_the_last_consumer_of_a_fed_queue_cannot_be_dropped(qconn: Conn) -> None:
    """Main: dropping audit's last consumer made every post to jobs fail (MB008 from the
    trigger's copy), and a stream group's routing with it: another user's work."""
    qconn.execute("SELECT mbus.create_queue('audit', 1)")
    qconn.execute("SELECT mbus.create_trigger('jobs', 'audit')")
    exc = fails(qconn, "SELECT mbus.drop_consumer('audit', 'default')")
    assert exc.sqlstate == "MB008" and "trigger from queue jobs" in message(exc)
    qconn.execute("SELECT mbus.post_jobs('{}')")  # nothing changed
    assert scalar(qconn, "SELECT count(*) FROM mbus.q_audit") == 1
    qconn.execute("SELECT mbus.create_queue('routed', 1)")
    qconn.execute("SELECT mbus.create_group('mover')")
    qconn.execute("SELECT mbus.subscribe_queue('mover', 'routed', 'e.topic = ''r''')")
    exc = fails(qconn, "SELECT mbus.drop_consumer('routed', 'default')")
    assert exc.sqlstate == "MB008" and "route of stream group mover" in message(exc)
    # another consumer left: fine; once the feeds are gone: fine
    qconn.execute("SELECT mbus.create_consumer('audit', 'other')")
    qconn.execute("SELECT mbus.drop_consumer('audit', 'default')")
    qconn.execute("SELECT mbus.drop_trigger('jobs', 'audit')")
    qconn.execute("SELECT mbus.drop_consumer('audit', 'other')")


def test_a_consumer_made_again_does_not_inherit_a_pause(qconn: Conn) -> None:
    """Main: the dropped consumer's pause stayed, and its namesake started paused."""
    qconn.execute("SELECT mbus.create_consumer('jobs', 'mail')")
    qconn.execute("SELECT mbus.pause_queue('jobs', 'mail')")
    qconn.execute("SELECT mbus.drop_consumer('jobs', 'mail')")
    qconn.execute("SELECT mbus.create_consumer('jobs', 'mail')")
    qconn.execute("SELECT mbus.post_jobs('{\"n\": 1}')")
    rows = qconn.execute("SELECT data FROM mbus.consume('jobs', 'mail')").fetchall()
    assert rows == [{"data": {"n": 1}}]


def test_an_own_form_iid_of_another_messages_id_is_refused(qconn: Conn) -> None:
    """Main: 'jobs.<n>@db', n the id of a pending message posted with a client iid, was
    stored as a second message with id n; the two shared their dependencies."""
    db = scalar(qconn, "SELECT current_database()")
    qconn.execute("SELECT mbus.post_jobs('{}', iid => 'client-1')")
    held = scalar(qconn, "SELECT id FROM mbus.q_jobs WHERE iid = 'client-1'")
    exc = fails(qconn, "SELECT mbus.post_jobs('{}', iid => %s)", f"jobs.{held}@{db}")
    assert exc.sqlstate == "MB006" and "another message" in message(exc)
    assert scalar(qconn, "SELECT count(*) FROM mbus.q_jobs") == 1
    own = scalar(qconn, "SELECT mbus.post_jobs('{}')")  # an own-form iid posted again: a no-op
    assert scalar(qconn, "SELECT mbus.post_jobs('{}', iid => %s)", own) == own
    assert scalar(qconn, "SELECT count(*) FROM mbus.q_jobs") == 2


def test_a_post_answered_by_its_dedupe_key_does_not_use_up_its_iid(qconn: Conn) -> None:
    """Main: the iid was remembered before the dedupe key answered, so a later real post
    with that iid stored nothing and returned the iid."""
    first = "SELECT mbus.post_jobs('{\"v\": 1}', dedupe_key => 'dk', iid => 'k9')"
    assert scalar(qconn, first) == "k9"
    again = "SELECT mbus.post_jobs('{\"v\": 2}', dedupe_key => 'dk', iid => 'k10')"
    assert scalar(qconn, again) == "k9"  # the pending message of the key
    assert scalar(qconn, "SELECT mbus.post_jobs('{\"v\": 3}', iid => 'k10')") == "k10"
    rows = qconn.execute("SELECT iid, data FROM mbus.q_jobs ORDER BY id").fetchall()
    assert [(r["iid"], r["data"]["v"]) for r in rows] == [("k9", 1), ("k10", 3)]
