"""Queues: post, selective consumers, transactional and lease consume, wake-ups, the dmq, stats."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import psycopg
from rich.console import Console

from pgmbus.queues import Bus

console = Console()


def show(label: str, value: object) -> None:
    console.print(f"  [bold]{label}[/]: {value}", highlight=False)


def run(dsn: str) -> None:
    """Show the queue API end to end on the database at ``dsn``."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM mbus.queue WHERE qname = 'demo_orders'").fetchone():
            conn.execute("SELECT mbus.drop_queue('demo_orders')")
        conn.execute("DELETE FROM mbus.dmq WHERE qname = 'demo_orders'")

    with Bus(dsn, poll_interval=1.0) as bus:
        bus.create_queue("demo_orders")
        bus.create_consumer("demo_orders", "demo_big", "(t.data->>'amount')::numeric >= 100")
        console.print("queue demo_orders with consumers default (all) and demo_big (amount >= 100)")

        iids = bus.post_batch("demo_orders", [{"order": i, "amount": 40 * i} for i in range(1, 5)])
        show("posted", iids)

        # Transactional style: the claim is undone by a rollback, kept by a commit.
        with psycopg.connect(dsn) as conn:
            (m,) = bus.consume("demo_orders", conn=conn)
            show("claimed then rolled back", m.data)
            conn.rollback()
            (m,) = bus.consume("demo_orders", conn=conn)
            conn.commit()
            show("claimed and committed", f"{m.data}, headers {m.headers}")
        big = bus.consume("demo_orders", "demo_big", limit=10)
        show("demo_big got only its matches", [x.data for x in big])

        # Lease style: a failing message is retried, then buried in the dmq with its reason.
        (m,) = bus.lease("demo_orders", lease=30, max_attempts=1)
        bus.bury(m, "ValueError: card declined")
        dead = bus.dmq("demo_orders")
        show("dead message", f"{dead[0].iid} ({dead[0].reason})")
        show("replayed", bus.dmq_replay(dead[0].dmq_id))

        # Wake-up: a consumer blocked in consume() is woken by the post's NOTIFY.
        bus.consume("demo_orders", limit=100)

        def post_later() -> None:
            time.sleep(0.5)
            with Bus(dsn) as other:
                other.post("demo_orders", {"order": 99, "amount": 1})

        threading.Thread(target=post_later).start()
        started = time.monotonic()
        (woken,) = bus.consume("demo_orders", wait=10)
        waited = time.monotonic() - started
        show("blocking consume woke for", f"{woken.data} after {waited:.2f}s (post at 0.50s)")

        # Storage upkeep instead of VACUUM: once a segment is full, posts move to the next one;
        # a drained segment is truncated (consumers run this once a second by themselves).
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                "UPDATE mbus.queue_segment SET rotate_bytes = 8192 WHERE qname = 'demo_orders'"
            )
        bus.post_batch("demo_orders", [{"order": 200 + i, "pad": "x" * 200} for i in range(60)])
        show("rotate (segment full)", bus.rotate("demo_orders"))
        bus.consume("demo_orders", limit=1000)
        bus.consume("demo_orders", "demo_big", limit=1000)
        show("rotate (old segment drained)", bus.rotate("demo_orders"))

        bus.post("demo_orders", {"order": 100, "amount": 500})
        for s in bus.stats("demo_orders"):
            show(f"stats {s.cname}", f"depth {s.depth}, ready {s.ready}, dmq {s.dmq}")

    console.print("[dim]$ pgmbus queue stats demo_orders[/]")
    subprocess.run(
        [sys.executable, "-m", "pgmbus", "queue", "stats", "demo_orders", "--dsn", dsn], check=True
    )
