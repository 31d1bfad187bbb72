"""The Wiki PubSub case: commits to a table in branches, one consumer group per (consumer, branch).

Revisions are written by several sources; consumers (notifications, statistics) each want the
commits of one branch, each exactly once, with their results stored in the same database.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import psycopg

from pgmbus import streams
from tests.streams.conftest import Connect

BY_BRANCH = "s.params @> jsonb_build_object('branch', e.payload->'row'->'branch_id')"


def _install(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "CREATE TABLE revision_commit (id bigserial PRIMARY KEY, branch_id int NOT NULL, "
        "author text NOT NULL)"
    )
    conn.execute("CREATE TABLE notifications (commit_id bigint PRIMARY KEY, branch_id int)")
    conn.execute(
        "CREATE TABLE user_stats (author text, branch_id int, commits int, "
        "PRIMARY KEY (author, branch_id))"
    )
    streams.capture_table(conn, "revision_commit", topic="revision.commit")
    for consumer, branch in (("notify", 0), ("stats", 0), ("stats", 5)):
        group = f"{consumer}_branch_{branch}"
        streams.create_group(conn, group, start="beginning")
        streams.subscribe(conn, group, BY_BRANCH, {"branch": branch})
    conn.commit()


def _consume(conn: psycopg.Connection[Any], consumer: str, branch: int) -> int:
    """One consumer step: results and cursor in one transaction (exactly once)."""
    group = f"{consumer}_branch_{branch}"
    with conn.transaction():
        batch = streams.read_subscriptions(conn, group, limit=7)
        for e in batch.events:
            row = e.payload["row"]
            if consumer == "notify":
                conn.execute("INSERT INTO notifications VALUES (%s, %s)", (row["id"], branch))
            else:
                conn.execute(
                    "INSERT INTO user_stats VALUES (%s, %s, 1) ON CONFLICT (author, branch_id) "
                    "DO UPDATE SET commits = user_stats.commits + 1",
                    (row["author"], branch),
                )
        if batch.cursor:
            streams.commit(conn, group, batch.cursor)
    return len(batch)


def test_consumers_per_branch_see_every_commit_once(connect: Connect, db_dsn: str) -> None:
    conn = connect()
    _install(conn)
    rng = random.Random(5)

    def editor(seed: int) -> None:
        r = random.Random(seed)
        with psycopg.connect(db_dsn) as w:
            for _ in range(15):
                w.execute(
                    "INSERT INTO revision_commit (branch_id, author) VALUES (%s, %s)",
                    (r.choice([0, 0, 5, 9]), f"user{r.randint(1, 4)}"),
                )
                if r.random() < 0.1:
                    w.rollback()
                else:
                    w.commit()

    editors = [threading.Thread(target=editor, args=(s,)) for s in range(4)]
    for t in editors:
        t.start()
    consumers = [("notify", 0), ("stats", 0), ("stats", 5)]
    while any(t.is_alive() for t in editors):
        _consume(conn, *rng.choice(consumers))
    for t in editors:
        t.join()
    for c in consumers:
        while _consume(conn, *c):
            pass

    def q(sql: str) -> Any:
        return conn.execute(sql).fetchall()

    assert q("SELECT commit_id FROM notifications ORDER BY 1") == q(
        "SELECT id FROM revision_commit WHERE branch_id = 0 ORDER BY id"
    )
    assert q("SELECT author, branch_id, commits FROM user_stats ORDER BY 1, 2") == q(
        "SELECT author, branch_id, count(*)::int FROM revision_commit WHERE branch_id IN (0, 5) "
        "GROUP BY 1, 2 ORDER BY 1, 2"
    )
    assert q("SELECT count(*) FROM revision_commit WHERE branch_id = 9")[0][0] > 0


def test_same_consumer_and_branch_is_locked_while_its_transaction_is_open(
    connect: Connect,
) -> None:
    conn = connect()
    _install(conn)
    streams.configure_group(conn, "notify_branch_0", on_busy="skip")
    conn.execute("INSERT INTO revision_commit (branch_id, author) VALUES (0, 'a')")
    conn.commit()
    first, second = connect(), connect()
    assert len(streams.read_subscriptions(first, "notify_branch_0")) == 1
    assert len(streams.read_subscriptions(second, "notify_branch_0")) == 0  # locked out
    first.rollback()  # the first handler dies: the standby takes over and gets the event
    assert len(streams.read_subscriptions(second, "notify_branch_0")) == 1
