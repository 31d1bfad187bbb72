"""Streams: transactional publish, groups that never skip a late commit, capture, subscriptions."""

from __future__ import annotations

import psycopg
from rich.console import Console
from rich.table import Table

from pgmbus import streams

console = Console()


def _reset(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    for (name,) in conn.execute(
        "SELECT name FROM mbus.stream_groups WHERE name LIKE 'demo\\_%'"
    ).fetchall():
        streams.drop_group(conn, str(name))
    conn.execute("DROP TABLE IF EXISTS demo_commits")


def run(dsn: str) -> None:
    """Run the streams part of the demo against ``dsn``."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        _reset(conn)
        streams.create_group(conn, "demo_billing")

        console.print("[bold]1. A late commit is read after it commits, never skipped[/]")
        slow = psycopg.connect(dsn)
        early = streams.publish(slow, "orders", {"order": 1}, key="alice")  # stays open
        later = streams.publish(conn, "orders", {"order": 2}, key="bob")  # commits first
        batch = streams.read_next(conn, "demo_billing")
        console.print(f"   open T1 published id {early}, T2 published id {later} and committed")
        console.print(f"   read now: {[e.id for e in batch.events]}  (T2 only)")
        assert batch.cursor
        streams.commit(conn, "demo_billing", batch.cursor)
        slow.commit()
        slow.close()
        batch = streams.read_next(conn, "demo_billing")
        console.print(f"   after T1 commits: {[e.id for e in batch.events]}  (T1, exactly once)")
        assert batch.cursor
        streams.commit(conn, "demo_billing", batch.cursor)
        rolled = psycopg.connect(dsn)
        streams.publish(rolled, "orders", {"order": "rolled back"})
        rolled.rollback()
        rolled.close()
        console.print(
            f"   a rolled-back publish is never read: {streams.read_next(conn, 'demo_billing')}"
        )

        console.print("[bold]2. Change capture (Wiki PubSub): one group per consumer and branch[/]")
        conn.execute(
            "CREATE TABLE demo_commits (id serial PRIMARY KEY, branch_id int, author text)"
        )
        streams.capture_table(conn, "demo_commits", topic="demo.commit")
        cond = "s.params @> jsonb_build_object('branch', e.payload->'row'->'branch_id')"
        for branch in (0, 5):
            streams.create_group(conn, f"demo_notify_{branch}")
            streams.subscribe(conn, f"demo_notify_{branch}", cond, {"branch": branch})
        conn.execute(
            "INSERT INTO demo_commits (branch_id, author) "
            "VALUES (0, 'ann'), (5, 'bob'), (0, 'cid'), (9, 'dan')"
        )
        conn.execute("UPDATE demo_commits SET author = 'ann2' WHERE id = 1")
        table = Table("group", "event", "op", "row", "subscriptions")
        for branch in (0, 5):
            group = f"demo_notify_{branch}"
            b = streams.read_subscriptions(conn, group)
            for e in b.events:
                table.add_row(
                    group,
                    str(e.id),
                    e.payload["op"],
                    str(e.payload["row"]),
                    str(list(e.subscription_ids)),
                )
            if b.cursor:
                streams.commit(conn, group, b.cursor)
        console.print(table)

        console.print("[bold]3. One bad event does not stop the stream[/]")
        streams.create_group(conn, "demo_retry", start="now")
        streams.configure_group(conn, "demo_retry", max_attempts=2)
        ids = streams.publish_batch(conn, "jobs", [{"n": 1}, {"n": "poison"}, {"n": 3}])
        b = streams.read_next(conn, "demo_retry")
        for e in b.events:
            if e.payload["n"] == "poison":
                streams.retry_event(conn, "demo_retry", e.id, error="cannot parse")
                streams.retry_event(conn, "demo_retry", e.id, error="cannot parse again")
        assert b.cursor
        streams.commit(conn, "demo_retry", b.cursor)
        dead = [d["event_id"] for d in streams.dmq(conn, "demo_retry")]
        console.print(f"   batch {ids} committed; dead letters: {dead}")

        console.print("[bold]4. Groups and maintenance[/]")
        status = Table("group", "state", "pending", "retries", "dead")
        for r in streams.group_status(conn):
            if str(r["group_name"]).startswith("demo_"):
                status.add_row(
                    r["group_name"],
                    r["state"],
                    str(r["pending_events"]),
                    str(r["retries"]),
                    str(r["dead_letters"]),
                )
        console.print(status)
        console.print(f"   maintain(): {streams.maintain(conn)}")
