"""Message dependencies (``headers.consume_after``): the design document's ordering statements.

Every test's docstring quotes the design document's statement it checks, translated into
English. The release of a waiting message happens when the transaction consuming its last dependency
commits, so these tests commit (a fresh database each).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

Conn = psycopg.Connection[dict[str, Any]]


@pytest.fixture
def ac(db_dsn: str) -> Iterator[Conn]:
    """An autocommit dict-row connection to a fresh database with queues ``a``, ``b``, ``c``."""
    with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as connection:
        for q in ("a", "b", "c"):
            connection.execute("SELECT mbus.create_queue(%s, 1)", (q,))
        yield connection


def post(conn: Conn, queue: str, data: dict[str, Any], after: Any = None, **kw: Any) -> str:
    headers = None if after is None else Jsonb({"consume_after": after})
    row = conn.execute(
        f"SELECT mbus.post_{queue}(%s, %s, iid => %s) AS iid",  # queue names are fixed here
        (Jsonb(data), headers, kw.get("iid")),
    ).fetchone()
    assert row is not None
    return str(row["iid"])


def take_one(conn: Conn, queue: str, consumer: str = "default") -> dict[str, Any] | None:
    rows = conn.execute("SELECT * FROM mbus.consume(%s, %s)", (queue, consumer)).fetchall()
    return rows[0] if rows else None


def data_of(conn: Conn, queue: str) -> Any:
    m = take_one(conn, queue)
    return None if m is None else m["data"]


def test_consume_after_orders_across_queues(ac: Conn) -> None:
    """ "For a message (call it 1) the ids of other messages (call them 2) may be given, before
    whose receipt message 1 cannot be received. It is in the headers and called consume_after.
    Messages 1 and 2 need not be in the same queue."."""
    create = post(ac, "a", {"cmd": "create user vasya"})
    post(ac, "b", {"cmd": "set limit 10"}, after=[create])
    assert take_one(ac, "b") is None  # its dependency still waits in queue a
    assert ac.execute("SELECT waits_for FROM mbus.waiting").fetchone() == {"waits_for": [create]}
    assert data_of(ac, "a") == {"cmd": "create user vasya"}
    assert data_of(ac, "b") == {"cmd": "set limit 10"}
    assert ac.execute("SELECT count(*) AS n FROM mbus.msg_dep").fetchone() == {"n": 0}


def test_release_waits_for_the_commit_and_rollback_keeps_waiting(ac: Conn, db_dsn: str) -> None:
    """ "message 1 cannot be received before they are received": a receipt that is rolled back
    did not happen, and one not yet committed has not happened yet."""
    dep = post(ac, "a", {"n": 1})
    post(ac, "b", {"n": 2}, after=dep)
    with psycopg.connect(db_dsn, row_factory=dict_row) as other:
        assert data_of(other, "a") == {"n": 1}
        assert take_one(ac, "b") is None  # consumed but not committed
        other.rollback()
    assert take_one(ac, "b") is None
    with psycopg.connect(db_dsn, row_factory=dict_row) as other:
        assert data_of(other, "a") == {"n": 1}
        other.commit()
    assert data_of(ac, "b") == {"n": 2}


def test_user_replication_scenario(ac: Conn) -> None:
    """The design document's example: "put 'create user' into the command queue of server N and keep
    its id as idN ... put 'set limit' with 'consume after idN' into the queue of server N ... put
    'set profile location' with 'consume after id1,id2,...idN' into 'local commands' and keep its id
    as id_place_set; put 'delete user' with 'consume after id_place_set' into 'local commands'"."""
    servers = ["srv1", "srv2", "srv3"]
    for s in servers:
        ac.execute("SELECT mbus.create_queue(%s, 1)", (s,))
    ac.execute("SELECT mbus.create_queue('local', 1)")
    ids = {s: post(ac, s, {"cmd": "create"}) for s in servers}
    for s in servers:
        post(ac, s, {"cmd": "limit"}, after=[ids[s]])
    place = post(ac, "local", {"cmd": "place"}, after=list(ids.values()))
    post(ac, "local", {"cmd": "delete"}, after=[place])
    log: list[str] = []
    # Drain repeatedly in an unhelpful order: local first, then the servers.
    for _ in range(10):
        for q in ["local", *reversed(servers)]:
            m = take_one(ac, q)
            if m is not None:
                log.append(f"{q}:{m['data']['cmd']}")
    assert sorted(log) == sorted(
        [f"{s}:create" for s in servers]
        + [f"{s}:limit" for s in servers]
        + ["local:place", "local:delete"]
    )
    for s in servers:
        assert log.index(f"{s}:create") < log.index(f"{s}:limit")
        assert log.index(f"{s}:create") < log.index("local:place")
    assert log.index("local:place") < log.index("local:delete")


def test_dead_dependency_in_the_dmq_keeps_blocking(ac: Conn) -> None:
    """ "If a message cannot be processed it must be put back into the same queue or into the
    dmq with the old iid" - so a dependency parked in the dmq has not been processed and keeps
    blocking; replayed and then consumed, it releases its dependants."""
    dep = post(ac, "a", {"n": 1})
    post(ac, "b", {"n": 2}, after=[dep])
    with ac.transaction():
        m = take_one(ac, "a")
        assert m is not None
        ac.execute(
            "SELECT mbus.post_dmq('a', %s, iid => %s, reason => 'boom')", (Jsonb(m["data"]), dep)
        )
    assert take_one(ac, "b") is None
    row = ac.execute("SELECT dmq_id FROM mbus.dmq WHERE iid = %s", (dep,)).fetchone()
    assert row is not None
    ac.execute("SELECT mbus.dmq_replay(%s)", (row["dmq_id"],))
    assert take_one(ac, "b") is None  # back in queue a, still not processed
    assert data_of(ac, "a") == {"n": 1}
    assert data_of(ac, "b") == {"n": 2}


def test_put_back_with_old_iid_keeps_blocking(ac: Conn) -> None:
    """ "...it must be put back into the same queue ... with the old iid": the dependant keeps
    waiting until the message is finally consumed."""
    dep = post(ac, "a", {"n": 1})
    post(ac, "b", {"n": 2}, after=[dep])
    with ac.transaction():
        m = take_one(ac, "a")
        assert m is not None
        post(ac, "a", m["data"], iid=m["iid"])
    assert take_one(ac, "b") is None
    assert data_of(ac, "a") == {"n": 1}
    assert data_of(ac, "b") == {"n": 2}


def test_a_message_put_back_cannot_wait_for_its_own_waiters(ac: Conn) -> None:
    """Main: B consumed and put back with its old iid, now waiting for A, which waits for B:
    both waited for ever. The put back is refused (MB006) if it would close a cycle, directly
    or through another message, and changes nothing."""
    b = post(ac, "a", {"n": "B"})
    a = post(ac, "b", {"n": "A"}, after=[b])
    c = post(ac, "c", {"n": "C"}, after=[a])  # C waits for A, which waits for B
    for closing in (a, c):
        with pytest.raises(psycopg.Error) as exc, ac.transaction():
            m = take_one(ac, "a")
            assert m is not None
            post(ac, "a", m["data"], after=[closing], iid=m["iid"])
        assert exc.value.sqlstate == "MB006" and "cycle" in str(exc.value)
    # nothing changed: B is there, A and C still wait, and go in order
    assert take_one(ac, "b") is None and take_one(ac, "c") is None
    assert data_of(ac, "a") == {"n": "B"}
    assert data_of(ac, "b") == {"n": "A"}
    assert data_of(ac, "c") == {"n": "C"}


def test_unknown_iids_self_and_cycles_rule(ac: Conn) -> None:
    """Documented rule (docs/workflows.md): a dependency of this database that is not found
    when the message is posted (consumed already, never posted, or posted later) is satisfied;
    one of another database that never came here is refused (MB006). Hence a message's own iid
    is ignored and no cycle can form: of two messages naming each other, the one posted first
    did not find the other."""
    db = ac.execute("SELECT current_database() AS d").fetchone()
    assert db is not None
    ghost = f"a.999999@{db['d']}"
    post(ac, "b", {"n": "ghost"}, after=[ghost, "not an iid"])
    assert data_of(ac, "b") == {"n": "ghost"}
    with pytest.raises(psycopg.Error) as exc:
        post(ac, "b", {"n": "foreign"}, after=["a.1@otherdb"])
    assert exc.value.sqlstate == "MB006"
    assert take_one(ac, "b") is None
    first_iid = ac.execute("SELECT mbus.get_iid('a') AS i").fetchone()
    second_iid = ac.execute("SELECT mbus.get_iid('b') AS i").fetchone()
    assert first_iid is not None and second_iid is not None
    post(ac, "a", {"n": "first"}, after=[second_iid["i"], first_iid["i"]], iid=first_iid["i"])
    post(ac, "b", {"n": "second"}, after=[first_iid["i"]], iid=second_iid["i"])
    assert take_one(ac, "b") is None
    assert data_of(ac, "a") == {"n": "first"}
    assert data_of(ac, "b") == {"n": "second"}


def test_bad_consume_after_is_refused(ac: Conn) -> None:
    """consume_after is an iid or an array of iids; anything else is a payload error (MB005)
    and nothing is posted."""
    with pytest.raises(psycopg.Error) as exc:
        post(ac, "a", {"n": 1}, after={"x": 1})
    assert exc.value.sqlstate == "MB005"
    assert take_one(ac, "a") is None


def test_every_consumer_of_a_dependency_must_receive_it(ac: Conn) -> None:
    """A dependency "still exists in a queue" while any consumer has not received its copy."""
    ac.execute("SELECT mbus.create_consumer('a', 'audit')")
    dep = post(ac, "a", {"n": 1})
    post(ac, "b", {"n": 2}, after=[dep])
    assert data_of(ac, "a") == {"n": 1}
    assert take_one(ac, "b") is None
    m = take_one(ac, "a", "audit")
    assert m is not None
    assert data_of(ac, "b") == {"n": 2}


def test_batch_post_and_take_of_waiting_messages(ac: Conn) -> None:
    """postn honours consume_after; take removes a waiting message (sagas rely on it)."""
    dep = post(ac, "a", {"n": 0})
    rows = ac.execute(
        "SELECT * FROM mbus.post_batch('b', %s, %s)",
        ([Jsonb({"n": 1}), Jsonb({"n": 2})], [Jsonb({"consume_after": [dep]}), None]),
    ).fetchall()
    assert len(rows) == 2
    assert data_of(ac, "b") == {"n": 2}
    assert take_one(ac, "b") is None
    taken = ac.execute("SELECT data FROM mbus.take(%s)", (rows[0]["post_batch"],)).fetchall()
    assert taken == [{"data": {"n": 1}}]
    assert data_of(ac, "a") == {"n": 0}
    assert ac.execute("SELECT count(*) AS n FROM mbus.msg_wait").fetchone() == {"n": 0}


def test_dropping_the_dependency_queue_releases(ac: Conn) -> None:
    """A dependency whose queue is dropped exists no more."""
    dep = post(ac, "a", {"n": 1})
    post(ac, "b", {"n": 2}, after=[dep])
    ac.execute("SELECT mbus.drop_queue('a')")
    assert data_of(ac, "b") == {"n": 2}


def test_release_refused_outside_read_committed(ac: Conn) -> None:
    """The release check must see other transactions' commits: a transaction at REPEATABLE READ
    consuming a message others wait on gets MB008 at commit and the message stays."""
    dep = post(ac, "a", {"n": 1})
    post(ac, "b", {"n": 2}, after=[dep])
    with pytest.raises(psycopg.Error) as exc, ac.transaction():
        ac.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        assert take_one(ac, "a") is not None
    assert exc.value.sqlstate == "MB008"
    assert data_of(ac, "a") == {"n": 1}
    assert data_of(ac, "b") == {"n": 2}


@pytest.mark.parametrize("rounds", [12])
def test_two_dependencies_consumed_at_once_release_exactly_once(db_dsn: str, rounds: int) -> None:
    """A child waiting on A and B, with A and B consumed by two transactions committing at the
    same moment (a barrier before COMMIT), is released exactly once, after both commit."""
    with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as setup:
        for q in ("a", "b", "c"):
            setup.execute("SELECT mbus.create_queue(%s, 1)", (q,))
        for i in range(rounds):
            ia = post(setup, "a", {"r": i})
            ib = post(setup, "b", {"r": i})
            post(setup, "c", {"r": i}, after=[ia, ib])
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def worker(queue: str) -> None:
        try:
            with psycopg.connect(db_dsn, row_factory=dict_row) as c:
                for _ in range(rounds):
                    assert take_one(c, queue) is not None
                    barrier.wait(timeout=20)
                    c.commit()
                    barrier.wait(timeout=20)
        except BaseException as e:
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(q,)) for q in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as check:
        got = [data_of(check, "c") for _ in range(rounds + 1)]
        assert sorted(g["r"] for g in got if g is not None) == list(range(rounds))
        assert got[-1] is None
        assert check.execute("SELECT count(*) AS n FROM mbus.msg_wait").fetchone() == {"n": 0}


def test_post_of_a_dependant_races_with_the_consume_of_its_dependency(
    ac: Conn, db_dsn: str
) -> None:
    """A dependant posted while its dependency is being consumed waits for that consume: after a
    commit it is free, after a rollback it waits. A dependant posted first holds its dependency
    (consumers skip it) until the post commits, then the consume releases it."""
    dep = post(ac, "a", {"n": 1})
    with psycopg.connect(db_dsn, row_factory=dict_row) as consumer:
        assert data_of(consumer, "a") == {"n": 1}  # deleted, not committed
        result: list[str] = []
        t = threading.Thread(target=lambda: result.append(post(ac, "b", {"n": 2}, after=[dep])))
        t.start()
        t.join(timeout=0.5)
        assert t.is_alive()  # the post waits for the consume to end
        consumer.commit()
        t.join(timeout=20)
    assert result and data_of(ac, "b") == {"n": 2}

    dep = post(ac, "a", {"n": 3})
    with psycopg.connect(db_dsn, row_factory=dict_row) as poster:
        post(poster, "b", {"n": 4}, after=[dep])  # not committed: holds the dependency
        assert take_one(ac, "a") is None
        poster.commit()
    assert data_of(ac, "a") == {"n": 3}
    assert data_of(ac, "b") == {"n": 4}


def test_a_release_waits_for_a_copy_being_consumed_and_then_frees(ac: Conn, db_dsn: str) -> None:
    """The release finds an unmarked copy of the dependency (put back, as a dmq replay or a
    re-post with the old iid does) locked by a transaction consuming it: it waits for that
    transaction, and when the copy is gone it frees the dependant. The copy was unmarked, so its
    own consume releases nothing: a release that kept its first reading would strand C."""
    first = post(ac, "a", {"n": 1})
    post(ac, "c", {"n": 2}, after=[first])
    ac.execute(  # the copy: same id, the iid not stored, unmarked
        "INSERT INTO mbus.q_a (c, vt, id, added, data, seg, priority)"
        " SELECT c, vt, id, added, data, seg, priority FROM mbus.q_a"
    )
    with (
        psycopg.connect(db_dsn, row_factory=dict_row) as holder,
        psycopg.connect(db_dsn, autocommit=True, row_factory=dict_row) as releaser,
    ):
        copies = holder.execute("DELETE FROM mbus.q_a WHERE NOT waited RETURNING id").fetchall()
        assert len(copies) == 1  # the copy is being consumed, not committed
        pid = releaser.info.backend_pid
        done: list[object] = []
        t = threading.Thread(target=lambda: done.append(data_of(releaser, "a")))
        t.start()  # consumes the marked original; its release at commit meets the copy
        for _ in range(200):
            row = ac.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
            ).fetchone()
            if row is not None and row["wait_event_type"] == "Lock":
                break
            t.join(timeout=0.05)
        else:
            pytest.fail("the release did not wait for the transaction holding the copy")
        holder.commit()
        t.join(timeout=20)
    assert done == [{"n": 1}]
    assert data_of(ac, "c") == {"n": 2}


def test_waiting_messages_cost_a_claim_nothing(ac: Conn) -> None:
    """The design document warns: "A large number of messages waiting for the delivery of another
    message may lower performance". Here they do not: waiting messages sit at vt = infinity, past
    the range of every claim's index scan, so a claim reads a handful of buffers however many wait
    (the speed itself is the bench scenario dependency_backlog)."""
    dep = post(ac, "a", {"n": 0})
    ac.execute(
        "SELECT count(*) FROM mbus.post_batch('b', array_fill('{}'::jsonb, ARRAY[3000]),"
        " array_fill(jsonb_build_object('consume_after', %s::text), ARRAY[3000]))",
        (dep,),
    )
    post(ac, "b", {"ready": True})
    ac.execute("ANALYZE mbus.q_b")
    # The settings the generated claim functions carry (the segments of a small queue are tiny,
    # so the planner would otherwise scan the one-row segment sequentially).
    ac.execute("SET enable_seqscan = off")
    ac.execute("SET enable_bitmapscan = off")
    plan = ac.execute(
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT s.ctid FROM mbus.q_b AS s"
        " WHERE s.c = 1 AND s.vt <= now() ORDER BY s.vt, s.id LIMIT 1 FOR UPDATE SKIP LOCKED"
    ).fetchone()
    assert plan is not None
    top = plan["QUERY PLAN"][0]["Plan"]
    text = str(top)
    assert "q_b_claim$" in text and "Seq Scan" not in text
    assert top["Shared Hit Blocks"] + top.get("Shared Read Blocks", 0) < 20
    assert scalar_count(ac, "SELECT count(*) AS n FROM mbus.waiting") == 3000
    assert data_of(ac, "b") == {"ready": True}


def scalar_count(conn: Conn, query: str) -> int:
    row = conn.execute(query).fetchone()
    assert row is not None
    return int(row["n"])


def test_consume_then_drop_in_one_transaction(ac: Conn) -> None:
    """Dropping a queue in the transaction that consumed a dependency from it works, and the
    dependant is free after the commit."""
    dep = post(ac, "a", {"n": 1})
    post(ac, "b", {"n": 2}, after=[dep])
    with ac.transaction():
        assert take_one(ac, "a") is not None
        ac.execute("SELECT mbus.drop_queue('a')")
    assert data_of(ac, "b") == {"n": 2}


def test_a_waiting_message_outside_the_parking_segment_is_released(ac: Conn) -> None:
    """A waiting message is posted to the parking segment 0, where its release looks first; one
    found elsewhere (parked by an older version, here moved by hand) is released all the same."""
    first = post(ac, "a", {"n": 1})
    waiting = post(ac, "b", {"n": 2}, after=[first])
    assert ac.execute("SELECT seg FROM mbus.q_b").fetchall() == [{"seg": 0}]
    ac.execute("UPDATE mbus.q_b SET seg = 2")  # a cross-partition update: the row moves
    assert take_one(ac, "b") is None
    assert data_of(ac, "a") == {"n": 1}
    got = take_one(ac, "b")
    assert got is not None and got["iid"] == waiting and got["data"] == {"n": 2}
