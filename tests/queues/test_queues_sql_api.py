"""The design document's statements about queues (the original mbus API), each checked.

Every test's docstring quotes the statement it checks, translated into English.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[dict[str, Any]]
HOUR = timedelta(hours=1)


def now(conn: Conn) -> datetime:
    row = conn.execute("SELECT clock_timestamp() AS t").fetchone()
    assert row is not None
    t: datetime = row["t"]
    return t


def post(conn: Conn, data: dict[str, Any], queue: str = "jobs", **kw: Any) -> str:
    args = ", ".join(f"{k} => %({k})s" for k in kw)
    query = f"SELECT mbus.post_{queue}(%(data)s{', ' + args if args else ''}) AS iid"
    params = {"data": Jsonb(data)} | {
        k: Jsonb(v) if isinstance(v, dict) else v for k, v in kw.items()
    }
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return str(row["iid"])


def consume(
    conn: Conn, queue: str = "jobs", consumer: str = "default", **kw: Any
) -> list[dict[str, Any]]:
    when = kw.get("p_now")
    return conn.execute(
        "SELECT * FROM mbus.consume(%s, %s, %s)", (queue, consumer, when)
    ).fetchall()


def sqlstate_of(exc: pytest.ExceptionInfo[psycopg.Error]) -> str | None:
    return exc.value.sqlstate


# --- queues and names -------------------------------------------------------------------------


def test_queue_delivers_and_supports_pub_sub(qconn: Conn) -> None:
    """ "Queues are normal, full-featured ones; they can do 1. pub/sub 2. queue"."""
    qconn.execute("SELECT mbus.create_consumer('jobs', 'audit')")
    post(qconn, {"n": 1})
    assert [m["data"] for m in consume(qconn)] == [{"n": 1}]
    assert consume(qconn) == []
    assert [m["data"] for m in consume(qconn, consumer="audit")] == [{"n": 1}]


@pytest.mark.parametrize("bad", ["Jobs", "my-queue", "q'x", '"q"', "", "a" * 25, "1q", "q x"])
def test_queue_name_rule(qconn: Conn, bad: str) -> None:
    """ "qname - the queue's name. Allowed are a-z (NOT A-Z!), _, 0-9"."""
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT mbus.create_queue(%s, 2)", (bad,))
    assert sqlstate_of(exc) == "MB001"
    qconn.rollback()
    row = qconn.execute("SELECT count(*) AS n FROM mbus.queue WHERE qname = %s", (bad,)).fetchone()
    assert row == {"n": 0}


def test_good_names_with_digits_and_underscore(qconn: Conn) -> None:
    """ "Allowed are a-z (NOT A-Z!), _, 0-9"."""
    qconn.execute("SELECT mbus.create_queue('q_2', 2)")
    assert post(qconn, {"x": 1}, queue="q_2").startswith("q_2.")


def test_ncons_is_kept_and_validated(qconn: Conn) -> None:
    """ "ncons - the number of parts available at once. Sensible values are 2 to 128-256"
    (this storage needs no parts: the value is kept, and must be positive)."""
    qconn.execute("SELECT mbus.create_queue('parts', 16)")
    row = qconn.execute("SELECT ncons FROM mbus.queue WHERE qname = 'parts'").fetchone()
    assert row == {"ncons": 16}
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT mbus.create_queue('parts2', -1)")
    assert sqlstate_of(exc) == "MB006"


def test_create_existing_queue_recreates_functions(qconn: Conn) -> None:
    """ "If the queue exists already, its functions for receiving and sending messages are
    recreated"."""
    iid = post(qconn, {"keep": True})
    qconn.execute("DROP FUNCTION mbus.post_jobs")
    qconn.execute("DROP FUNCTION mbus.consume_jobs_by_default")
    qconn.execute("SELECT mbus.create_queue('jobs', 4)")
    post(qconn, {"second": True})
    got = qconn.execute("SELECT * FROM mbus.consume_jobs_by_default()").fetchall()
    assert [m["iid"] for m in got] == [iid]  # the old message survived and comes first


def test_default_consumer_is_created(qconn: Conn) -> None:
    """ "Note: when a queue is created, the consumer default is created"."""
    rows = qconn.execute("SELECT cname FROM mbus.consumer WHERE qname = 'jobs'").fetchall()
    assert rows == [{"cname": "default"}]


def test_drop_queue(qconn: Conn) -> None:
    """ "Ordinary queues are dropped with the function mbus.drop_queue(qname)"."""
    qconn.execute("SELECT mbus.create_consumer('jobs', 'c1')")
    post(qconn, {"n": 1})
    qconn.execute("SELECT mbus.drop_queue('jobs')")
    assert qconn.execute("SELECT to_regclass('mbus.q_jobs') AS t").fetchone() == {"t": None}
    funcs = qconn.execute(
        "SELECT count(*) AS n FROM pg_proc WHERE pronamespace = 'mbus'::regnamespace"
        " AND proname LIKE '%jobs%'"
    ).fetchone()
    assert funcs == {"n": 0}
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT mbus.post('jobs', '{}')")
    assert sqlstate_of(exc) == "MB002"


# --- posting ----------------------------------------------------------------------------------


def test_post_returns_iid(qconn: Conn) -> None:
    """ "Return value: the iid of the added message"."""
    iid = post(qconn, {"a": 1})
    (msg,) = consume(qconn)
    assert msg["iid"] == iid


def test_post_generic_returns_nothing(qconn: Conn) -> None:
    """ "and also: mbus.post(qname text, data ...). The function returns nothing"."""
    qconn.execute("SELECT mbus.post('jobs', '{\"a\": 1}')")
    row = qconn.execute(
        "SELECT prorettype::regtype::text AS t FROM pg_proc"
        " WHERE oid = 'mbus.post(text, jsonb, jsonb, jsonb, timestamptz, timestamptz, text, text,"
        " anycompatible, integer)'::regprocedure"
    ).fetchone()
    assert row == {"t": "void"}
    assert [m["data"] for m in consume(qconn)] == [{"a": 1}]


def test_payload_is_a_json_object(qconn: Conn) -> None:
    """ "The payload of a queue is an hstore value" (deliberate break: a jsonb object)."""
    for bad in ("[1]", '"s"', "1", "null"):
        with pytest.raises(psycopg.Error) as exc:
            qconn.execute(f"SELECT mbus.post_jobs('{bad}'::jsonb)")
        assert sqlstate_of(exc) == "MB005"
        qconn.rollback()
        qconn.execute("SELECT mbus.create_queue('jobs', 4)")
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT mbus.post_jobs('{}', properties => '[1]')")
    assert sqlstate_of(exc) == "MB005"


def test_properties_and_headers_are_kept(qconn: Conn) -> None:
    """ "properties - message headers meant for the application program; headers - message
    headers, the application is not expected to send them"."""
    post(qconn, {"a": 1}, properties={"STATE": "DONE"}, headers={"trace": "x1"})
    (msg,) = consume(qconn)
    assert msg["properties"] == {"STATE": "DONE"}
    assert msg["headers"]["trace"] == "x1"


def test_iid_from_get_iid(qconn: Conn) -> None:
    """ "iid - the id of the message being added. It must be obtained with mbus.get_iid. If not
    given, the value is obtained by the function itself"."""
    row = qconn.execute("SELECT mbus.get_iid('jobs') AS iid").fetchone()
    assert row is not None
    given = row["iid"]
    assert post(qconn, {"a": 1}, iid=given) == given
    own = post(qconn, {"a": 2})
    assert own != given and own.startswith("jobs.") and own.endswith("@" + qconn.info.dbname)
    assert [
        m["iid"] for m in qconn.execute("SELECT * FROM mbus.consumen('jobs', 'default', 5)")
    ] == [
        given,
        own,
    ]


def test_iid_is_globally_unique_and_id_unique(qconn: Conn) -> None:
    """ "id - simply the message's id; all one can say about it is that it is unique";
    "iid - the globally unique id of the message ... every database exchanging messages has a
    unique name"."""
    qconn.execute("SELECT mbus.create_queue('other', 2)")
    iids = [post(qconn, {"n": i}) for i in range(3)] + [post(qconn, {"n": 9}, queue="other")]
    assert len(set(iids)) == 4
    assert all(i.endswith("@" + qconn.info.dbname) for i in iids)
    ids = [m["id"] for m in qconn.execute("SELECT * FROM mbus.consumen('jobs', 'default', 9)")]
    ids += [m["id"] for m in consume(qconn, queue="other")]
    assert len(set(ids)) == 4


def test_iid_of_another_queue_is_not_takeable(qconn: Conn) -> None:
    """ "WARNING: when a message is posted with an iid obtained for another queue, it is posted
    successfully but later is not available to mbus.take(iid)"."""
    qconn.execute("SELECT mbus.create_queue('other', 2)")
    row = qconn.execute("SELECT mbus.get_iid('other') AS iid").fetchone()
    assert row is not None
    foreign = row["iid"]
    assert post(qconn, {"a": 1}, iid=foreign) == foreign
    assert qconn.execute("SELECT * FROM mbus.take(%s)", (foreign,)).fetchall() == []
    assert qconn.execute("SELECT mbus.peek_jobs(%s) AS p", (foreign,)).fetchone() == {"p": True}
    taken = qconn.execute("SELECT * FROM mbus.take_from_jobs_by_default(%s)", (foreign,))
    assert [m["iid"] for m in taken] == [foreign]
    # a second foreign iid (posting the first again within queues.iid_window stores nothing)
    row = qconn.execute("SELECT mbus.get_iid('other') AS iid").fetchone()
    assert row is not None
    post(qconn, {"a": 1}, iid=row["iid"])
    assert [m["iid"] for m in consume(qconn)] == [row["iid"]]  # it was posted


def test_batch_post(qconn: Conn) -> None:
    """A batch post that takes arrays (the issue): every message arrives, iids in order."""
    rows = qconn.execute(
        "SELECT * FROM mbus.post_batch('jobs', %s, properties => %s)",
        ([Jsonb({"n": i}) for i in range(5)], [Jsonb({"k": i}) for i in range(5)]),
    ).fetchall()
    iids = [r["post_batch"] for r in rows]
    got = qconn.execute("SELECT * FROM mbus.consumen_jobs_by_default(10)").fetchall()
    assert [m["iid"] for m in got] == iids
    assert [m["data"]["n"] for m in got] == list(range(5))
    assert [m["properties"]["k"] for m in got] == list(range(5))


# --- delivery, delay, expiry ------------------------------------------------------------------


def test_delayed_until_is_never_delivered_before(qconn: Conn) -> None:
    """ "delayed_until - the message will be delivered AFTER the given date"."""
    t0 = now(qconn)
    post(qconn, {"retry": 1}, delayed_until=t0 + HOUR)
    assert consume(qconn, p_now=t0 + HOUR - timedelta(microseconds=1)) == []
    assert consume(qconn, p_now=t0 + timedelta(minutes=59)) == []
    (msg,) = consume(qconn, p_now=t0 + HOUR)
    assert msg["data"] == {"retry": 1} and msg["delayed_until"] == t0 + HOUR


def test_delayed_message_does_not_block_others(qconn: Conn) -> None:
    """ "delayed_until ... In an hour this message will be picked again" (meanwhile the queue
    keeps delivering the others)."""
    t0 = now(qconn)
    post(qconn, {"late": 1}, delayed_until=t0 + HOUR)
    post(qconn, {"now": 1})
    assert [m["data"] for m in consume(qconn, p_now=t0 + timedelta(seconds=1))] == [{"now": 1}]


def test_expires_is_never_delivered_after(qconn: Conn) -> None:
    """ "expires - the date until which the message lives. By default, forever. When the date is
    reached the message is removed"."""
    t0 = now(qconn)
    post(qconn, {"url": "x"}, expires=t0 + HOUR)
    assert consume(qconn, p_now=t0 + HOUR) == []  # expired exactly at the instant
    assert consume(qconn, p_now=t0 + 2 * HOUR) == []
    (msg,) = consume(qconn, p_now=t0 + timedelta(minutes=59))
    assert msg["expires"] == t0 + HOUR


def test_clear_queue_removes_expired(qconn: Conn) -> None:
    """ "The queue is cleaned of such messages by the function mbus.clear_queue_<qname>()"."""
    t0 = now(qconn)
    post(qconn, {"a": 1}, expires=t0 + HOUR)
    keep = post(qconn, {"b": 1}, expires=t0 + 3 * HOUR)
    forever = post(qconn, {"c": 1})
    row = qconn.execute("SELECT mbus.clear_queue_jobs(%s) AS n", (t0 + 2 * HOUR,)).fetchone()
    assert row == {"n": 1}
    left = qconn.execute("SELECT iid FROM mbus.consumen_jobs_by_default(9, %s)", (t0,)).fetchall()
    assert [r["iid"] for r in left] == [keep, forever]


def test_consume_returns_one_row_shaped_like_qt_model(qconn: Conn) -> None:
    """ "mbus.consume(qname) - receives messages from queue qname. Returns a result set of one
    message, columns as in mbus.qt_model ... id, iid, added - the time the message was added"."""
    post(qconn, {"a": 1})
    post(qconn, {"a": 2})
    cur = qconn.execute("SELECT * FROM mbus.consume('jobs')")
    rows = cur.fetchall()
    assert len(rows) == 1
    assert cur.description is not None
    model = qconn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = 'mbus.qt_model'::regclass::oid"
        " AND attnum > 0 ORDER BY attnum"
    ).fetchall()
    assert [d.name for d in cur.description] == [m["attname"] for m in model]
    assert {
        "id",
        "iid",
        "added",
        "delayed_until",
        "expires",
        "headers",
        "properties",
        "data",
    } <= set(rows[0])
    assert rows[0]["added"] <= now(qconn)


def test_consume_functions_per_consumer(qconn: Conn) -> None:
    """ "mbus.consume(qname, cname) - returns a set of type mbus.qt_model of one row from queue
    qname for consumer cname; mbus.consume_<qname>_by_<cname>() - see above;
    mbus.consumen_<qname>_by_<cname>(amt integer) - a set of at most amt messages"."""
    qconn.execute("SELECT mbus.create_consumer('jobs', 'cons')")
    for i in range(5):
        post(qconn, {"n": i})
    assert [m["data"]["n"] for m in consume(qconn, consumer="cons")] == [0]
    one = qconn.execute("SELECT * FROM mbus.consume_jobs_by_cons()").fetchall()
    assert [m["data"]["n"] for m in one] == [1]
    three = qconn.execute("SELECT * FROM mbus.consumen_jobs_by_cons(2)").fetchall()
    assert [m["data"]["n"] for m in three] == [2, 3]
    rest = qconn.execute("SELECT * FROM mbus.consumen_jobs_by_cons(10)").fetchall()
    assert [m["data"]["n"] for m in rest] == [4]
    assert len(qconn.execute("SELECT * FROM mbus.consumen_jobs_by_default(10)").fetchall()) == 5


def test_consume_empty_queue_returns_empty_set(qconn: Conn) -> None:
    """ "If a message cannot be received, an empty set is returned ... 1. the queue is simply
    empty"."""
    assert consume(qconn) == []
    assert qconn.execute("SELECT * FROM mbus.consumen_jobs_by_default(5)").fetchall() == []


def test_headers_after_receipt(qconn: Conn) -> None:
    """ "After receipt the headers field holds: seenby - text[], the databases that received the
    message on its way; source_db - the database where it was created; destination - the queue it
    was received from; enqueue_time - when the original message was enqueued (may differ from
    added, the time it was put into the queue it is received from)"."""
    qconn.execute("SELECT mbus.create_queue('copy', 2)")
    qconn.execute("SELECT mbus.create_trigger('jobs', 'copy', NULL)")
    post(qconn, {"a": 1})
    (orig,) = consume(qconn)
    db = qconn.info.dbname
    assert orig["headers"]["seenby"] == [db]
    assert orig["headers"]["source_db"] == db
    assert orig["headers"]["destination"] == "jobs"
    assert datetime.fromisoformat(orig["headers"]["enqueue_time"]) == orig["added"]
    (copy,) = consume(qconn, queue="copy")
    assert copy["headers"]["destination"] == "copy"
    assert copy["headers"]["seenby"] == [db]
    assert copy["headers"]["enqueue_time"] == orig["headers"]["enqueue_time"]
    # a message relayed from another database keeps its origin and appends this database
    post(
        qconn,
        {"b": 1},
        headers={
            "seenby": ["far"],
            "source_db": "far",
            "enqueue_time": "2020-01-01T00:00:00+00:00",
        },
    )
    (relayed,) = consume(qconn)
    assert relayed["headers"]["seenby"] == ["far", db]
    assert relayed["headers"]["source_db"] == "far"
    assert relayed["headers"]["enqueue_time"] == "2020-01-01T00:00:00+00:00"
    assert relayed["added"] != datetime.fromisoformat("2020-01-01T00:00:00+00:00")


# --- consumers and selectors ------------------------------------------------------------------


def test_consumer_names_unique_across_queues(qconn: Conn) -> None:
    """ "The consumer's name must be unique among all consumers (i.e. not only the consumers of
    this queue)"."""
    qconn.execute("SELECT mbus.create_queue('other', 2)")
    qconn.execute("SELECT mbus.create_consumer('jobs', 'billing')")
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT mbus.create_consumer('other', 'billing')")
    assert sqlstate_of(exc) == "MB003"


def test_selector_over_t_filters(qconn: Conn) -> None:
    """ "selector - an expression restricting the set of received messages ... the alias of the
    selected row is t, its type mbus.qt_model, i.e. a selector may look like
    $$(t.properties->'STATE')='DONE'$$" (jsonb: ->> for text)."""
    qconn.execute(
        "SELECT mbus.create_consumer('jobs', 'done', $$(t.properties->>'STATE')='DONE'$$)"
    )
    post(qconn, {"n": 1}, properties={"STATE": "NEW"})
    post(qconn, {"n": 2}, properties={"STATE": "DONE"})
    post(qconn, {"n": 3})
    got = qconn.execute("SELECT * FROM mbus.consumen_jobs_by_done(10)").fetchall()
    assert [m["data"]["n"] for m in got] == [2]
    assert len(qconn.execute("SELECT * FROM mbus.consumen_jobs_by_default(10)").fetchall()) == 3


@pytest.mark.parametrize(
    "selector",
    [
        "(t.properties->>'user_posted') = current_user",
        "t.added > now()",
        "random() > 0.5",
        "t.id IN (SELECT 1)",
        "t.no_such_column = 1",
        "t.data ->> ",
        "true; DROP TABLE mbus.queue",
        "",
    ],
)
def test_selector_must_be_static_and_valid(qconn: Conn, selector: str) -> None:
    """ "Only static values known when the consumer is created are allowed in selector ... but not
    $$(t.properties>'user_posted')=current_user$$"."""
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT mbus.create_consumer('jobs', 'picky', %s)", (selector,))
    assert sqlstate_of(exc) == "MB004"
    qconn.rollback()
    row = qconn.execute("SELECT count(*) AS n FROM mbus.consumer WHERE cname = 'picky'").fetchone()
    assert row == {"n": 0}


def test_consumer_receives_messages_posted_after_creation(qconn: Conn) -> None:
    """A consumer receives messages posted after it was created (the issue; durable
    subscribers)."""
    post(qconn, {"before": 1})
    qconn.execute("SELECT mbus.create_consumer('jobs', 'late')")
    post(qconn, {"after": 1})
    got = qconn.execute("SELECT * FROM mbus.consumen_jobs_by_late(10)").fetchall()
    assert [m["data"] for m in got] == [{"after": 1}]


def test_two_consumers_each_get_their_copy(qconn: Conn) -> None:
    """ "If these processes receive messages from queue q for consumers 'cons1' and 'cons2'
    respectively, each of them gets its own copy of the message"."""
    qconn.execute("SELECT mbus.create_consumer('jobs', 'cons1')")
    qconn.execute("SELECT mbus.create_consumer('jobs', 'cons2')")
    iid = post(qconn, {"m": 1})
    assert [m["iid"] for m in consume(qconn, consumer="cons1")] == [iid]
    assert [m["iid"] for m in consume(qconn, consumer="cons2")] == [iid]
    assert consume(qconn, consumer="cons1") == [] and consume(qconn, consumer="cons2") == []


def test_drop_consumer(qconn: Conn) -> None:
    """Consumers are dropped with their pending deliveries and functions (the issue)."""
    qconn.execute("SELECT mbus.create_consumer('jobs', 'gone')")
    post(qconn, {"a": 1})
    qconn.execute("SELECT mbus.drop_consumer('jobs', 'gone')")
    assert qconn.execute("SELECT count(*) AS n FROM mbus.q_jobs").fetchone() == {"n": 1}
    assert qconn.execute("SELECT to_regproc('mbus.consume_jobs_by_gone') AS f").fetchone() == {
        "f": None
    }
    with pytest.raises(psycopg.Error) as exc:
        consume(qconn, consumer="gone")
    assert sqlstate_of(exc) == "MB002"


def test_noindex_reports_index_as_notice(qconn: Conn) -> None:
    """ "For a large queue pass noindex when creating the consumer: then no index is created,
    but the text of the query creating the needed index is returned as raise notice" (this
    storage needs no per-consumer index; the notice names the index that serves it)."""
    notices: list[str] = []
    qconn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    before = qconn.execute(
        "SELECT count(*) AS n FROM pg_indexes WHERE tablename LIKE 'q\\_jobs%%'"
    ).fetchone()
    qconn.execute("SELECT mbus.create_consumer('jobs', 'big', NULL, true)")
    after = qconn.execute(
        "SELECT count(*) AS n FROM pg_indexes WHERE tablename LIKE 'q\\_jobs%%'"
    ).fetchone()
    assert before == after
    assert any("q_jobs_claim" in n and "big" in n for n in notices)


# --- peek and take ----------------------------------------------------------------------------


def test_peek(qconn: Conn) -> None:
    """ "mbus.peek_<qname>(msgid text default null) - checks whether queue qname has a message with
    iid=msgid. If msgid is null, checks whether there is any message at all"."""
    assert qconn.execute("SELECT mbus.peek_jobs() AS p").fetchone() == {"p": False}
    iid = post(qconn, {"a": 1})
    assert qconn.execute("SELECT mbus.peek_jobs() AS p").fetchone() == {"p": True}
    assert qconn.execute("SELECT mbus.peek_jobs(%s) AS p", (iid,)).fetchone() == {"p": True}
    assert qconn.execute("SELECT mbus.peek_jobs('jobs.0@x') AS p").fetchone() == {"p": False}
    assert qconn.execute("SELECT mbus.peek('jobs', %s) AS p", (iid,)).fetchone() == {"p": True}


def test_peek_true_does_not_guarantee_consume(qconn: Conn) -> None:
    """ "A true value returned by peek does NOT GUARANTEE that any function of the consume family
    returns anything"."""
    t0 = now(qconn)
    post(qconn, {"a": 1}, delayed_until=t0 + HOUR)
    assert qconn.execute("SELECT mbus.peek_jobs() AS p").fetchone() == {"p": True}
    assert consume(qconn, p_now=t0) == []


def test_take_from_by_iid(qconn: Conn) -> None:
    """ "mbus.take_from_<qname>_by_<cname>(msgid text) - receive from queue qname the message with
    iid=msgid"."""
    post(qconn, {"n": 1})
    iid = post(qconn, {"n": 2})
    got = qconn.execute("SELECT * FROM mbus.take_from_jobs_by_default(%s)", (iid,)).fetchall()
    assert [m["data"] for m in got] == [{"n": 2}]
    assert (
        qconn.execute("SELECT * FROM mbus.take_from_jobs_by_default(%s)", (iid,)).fetchall() == []
    )
    assert [m["data"] for m in consume(qconn)] == [{"n": 1}]


def test_take_by_iid_finds_the_queue(qconn: Conn) -> None:
    """mbus.take(iid) finds the queue from the iid (DESIGN) and takes the message away from
    every consumer."""
    qconn.execute("SELECT mbus.create_queue('bungs', 2)")
    qconn.execute("SELECT mbus.create_consumer('bungs', 'watcher')")
    iid = post(qconn, {"bung": 1}, queue="bungs")
    got = qconn.execute("SELECT * FROM mbus.take(%s)", (iid,)).fetchall()
    assert [m["data"] for m in got] == [{"bung": 1}]
    assert qconn.execute("SELECT count(*) AS n FROM mbus.q_bungs").fetchone() == {"n": 0}
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT * FROM mbus.take('not an iid')")
    assert sqlstate_of(exc) == "MB006"


# --- triggers and the dmq ---------------------------------------------------------------------


def test_trigger_copies_when_selector_holds(qconn: Conn) -> None:
    """ "For every queue a trigger can be created, i.e. when a message arrives in the queue it can
    be copied into another queue if the trigger's selector is true ...
    mbus.create_trigger(src_queue_name text, dst_queue_name text, selector text)"."""
    qconn.execute("SELECT mbus.create_queue('urgent', 2)")
    qconn.execute(
        "SELECT mbus.create_trigger('jobs', 'urgent', $$(t.properties->>'prio') = 'high'$$)"
    )
    post(qconn, {"n": 1}, properties={"prio": "low"})
    post(qconn, {"n": 2}, properties={"prio": "high"})
    qconn.execute(
        "SELECT * FROM mbus.post_batch('jobs', %s, properties => %s)",
        ([Jsonb({"n": 3}), Jsonb({"n": 4})], [Jsonb({"prio": "high"}), Jsonb({})]),
    )
    copies = qconn.execute("SELECT * FROM mbus.consumen_jobs_by_default(0)").fetchall()
    assert copies == []
    urgent = qconn.execute("SELECT * FROM mbus.consumen_urgent_by_default(10)").fetchall()
    assert [m["data"]["n"] for m in urgent] == [2, 3]
    assert len(qconn.execute("SELECT * FROM mbus.consumen_jobs_by_default(10)").fetchall()) == 4


def test_trigger_refuses_cycles_and_bad_selectors(qconn: Conn) -> None:
    """Triggers: a copy loop or a non-static selector is refused (the issue: bad input gets a
    clear typed error)."""
    qconn.execute("SELECT mbus.create_queue('b', 2)")
    qconn.execute("SELECT mbus.create_trigger('jobs', 'b', NULL)")
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT mbus.create_trigger('b', 'jobs', NULL)")
    assert sqlstate_of(exc) == "MB006"
    qconn.rollback()
    qconn.execute("SELECT mbus.create_queue('jobs', 4)")
    qconn.execute("SELECT mbus.create_queue('b', 2)")
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT mbus.create_trigger('jobs', 'b', 'now() > t.added')")
    assert sqlstate_of(exc) == "MB004"


def test_drop_destination_queue_drops_trigger(qconn: Conn) -> None:
    """Dropping a trigger's destination removes the trigger and posting to the source goes on."""
    qconn.execute("SELECT mbus.create_queue('dst', 2)")
    qconn.execute("SELECT mbus.create_trigger('jobs', 'dst', NULL)")
    qconn.execute("SELECT mbus.drop_queue('dst')")
    post(qconn, {"a": 1})
    assert len(consume(qconn)) == 1


def test_unprocessable_message_back_to_queue_with_old_iid(qconn: Conn) -> None:
    """ "A message that cannot be processed must be put back into the same queue or into the dmq
    with its old iid" (the same queue)."""
    iid = post(qconn, {"a": 1})
    (msg,) = consume(qconn)
    t0 = now(qconn)
    again = qconn.execute(
        "SELECT mbus.post_jobs(%s, %s, %s, %s, NULL, %s) AS iid",
        (Jsonb(msg["data"]), Jsonb(msg["headers"]), None, t0 + HOUR, msg["iid"]),
    ).fetchone()
    assert again == {"iid": iid}
    assert consume(qconn, p_now=t0) == []
    assert [m["iid"] for m in consume(qconn, p_now=t0 + HOUR)] == [iid]


def test_unprocessable_message_to_dmq_with_old_iid_and_replay(qconn: Conn) -> None:
    """ "A message that cannot be processed must be put back into the same queue or into the dmq
    with its old iid" (the dmq; inspectable and replayable)."""
    qconn.execute("SELECT mbus.create_consumer('jobs', 'other')")
    iid = post(qconn, {"a": 1})
    row = qconn.execute(
        "SELECT mbus.to_dmq(m, 'jobs', 'parser failed', 'default') AS d FROM mbus.consume('jobs') m"
    ).fetchone()
    assert row is not None
    dead = qconn.execute("SELECT * FROM mbus.dmq WHERE dmq_id = %s", (row["d"],)).fetchone()
    assert dead is not None
    assert (dead["iid"], dead["qname"], dead["cname"], dead["reason"]) == (
        iid,
        "jobs",
        "default",
        "parser failed",
    )
    assert dead["data"] == {"a": 1}
    replayed = qconn.execute("SELECT mbus.dmq_replay(%s) AS iid", (row["d"],)).fetchone()
    assert replayed == {"iid": iid}
    assert [m["iid"] for m in consume(qconn)] == [iid]
    # the other consumer still has exactly its one copy: replay went to 'default' only
    assert len(qconn.execute("SELECT * FROM mbus.consumen_jobs_by_other(9)").fetchall()) == 1
    assert qconn.execute("SELECT count(*) AS n FROM mbus.dmq").fetchone() == {"n": 0}
    # post_dmq: the field-wise form
    d2 = qconn.execute(
        "SELECT mbus.post_dmq('jobs', '{\"x\": 1}', iid => %s, reason => 'bad') AS d", (iid,)
    ).fetchone()
    assert d2 is not None
    qconn.execute("SELECT mbus.dmq_replay(%s)", (d2["d"],))
    assert [m["iid"] for m in consume(qconn)] == [iid]
    assert [m["iid"] for m in consume(qconn, consumer="other")] == [iid]


# --- bad input --------------------------------------------------------------------------------


def test_unknown_queue_and_consumer(qconn: Conn) -> None:
    """Unknown queue or consumer: a clear typed error (the issue)."""
    for query in (
        "SELECT mbus.post('nosuch', '{}')",
        "SELECT * FROM mbus.consume('nosuch')",
        "SELECT * FROM mbus.consume('jobs', 'nosuch')",
        "SELECT mbus.create_consumer('nosuch', 'c')",
        "SELECT mbus.drop_queue('nosuch')",
        "SELECT mbus.get_iid('nosuch')",
    ):
        with pytest.raises(psycopg.Error) as exc:
            qconn.execute(query)
        assert sqlstate_of(exc) == "MB002", query
        qconn.rollback()
        qconn.execute("SELECT mbus.create_queue('jobs', 4)")


def test_negative_amount_refused(qconn: Conn) -> None:
    """Negative amounts: a clear typed error, no message lost (the issue)."""
    post(qconn, {"a": 1})
    with pytest.raises(psycopg.Error) as exc:
        qconn.execute("SELECT * FROM mbus.consumen_jobs_by_default(-1)")
    assert sqlstate_of(exc) == "MB006"
    qconn.rollback()
    qconn.execute("SELECT mbus.create_queue('jobs', 4)")
    post(qconn, {"a": 1})
    assert len(qconn.execute("SELECT * FROM mbus.consumen_jobs_by_default(0)").fetchall()) == 0
    assert len(consume(qconn)) == 1


def test_failed_create_leaves_nothing(qconn: Conn) -> None:
    """Bad input: nothing half-created (the issue)."""
    qconn.execute("SAVEPOINT s")
    with pytest.raises(psycopg.Error):
        qconn.execute("SELECT mbus.create_consumer('jobs', 'x', 't.nope')")
    qconn.execute("ROLLBACK TO SAVEPOINT s")
    assert qconn.execute("SELECT to_regproc('mbus.consume_jobs_by_x') AS f").fetchone() == {
        "f": None
    }
    assert qconn.execute("SELECT count(*) AS n FROM mbus.consumer").fetchone() == {"n": 1}
