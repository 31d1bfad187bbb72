"""Queue workflows: consume_after ordering, request-response, a view for posting, a saga."""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from rich.console import Console

from pgmbus.queues import Bus

console = Console()
HERE = Path(__file__).resolve().parent


def show(label: str, value: object) -> None:
    console.print(f"  [bold]{label}[/]: {value}", highlight=False)


def _tour() -> object:
    spec = importlib.util.spec_from_file_location("tour_booking", HERE / "tour_booking.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tour_booking"] = module
    spec.loader.exec_module(module)
    return module


def run(dsn: str) -> None:
    """Show the queue workflows end to end on the database at ``dsn``."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for q in ("demo_users", "demo_limits", "demo_calc"):
            if conn.execute("SELECT 1 FROM mbus.queue WHERE qname = %s", (q,)).fetchone():
                conn.execute("SELECT mbus.drop_queue(%s)", (q,))

    with Bus(dsn, poll_interval=0.2) as bus:
        console.print("[bold]consume_after[/]: 'set limit' waits for 'create user'")
        for q in ("demo_users", "demo_limits", "demo_calc"):
            bus.create_queue(q)
        create = bus.post("demo_users", {"cmd": "create user vasya"})
        bus.post("demo_limits", {"cmd": "set limit 10"}, headers={"consume_after": [create]})
        show("limits before", [m.data for m in bus.consume("demo_limits")])
        show("users", [m.data for m in bus.consume("demo_users")])
        show("limits after", [m.data for m in bus.consume("demo_limits")])

        console.print("[bold]request-response[/] over a temporary reply queue")

        def responder() -> None:
            with Bus(dsn, poll_interval=0.2) as other:
                for m in other.consume("demo_calc", wait=10):
                    other.reply(m, {"sum": m.data["a"] + m.data["b"]})

        t = threading.Thread(target=responder)
        t.start()
        reply = bus.request("demo_calc", {"a": 2, "b": 3}, timeout=10)
        t.join()
        show("2 + 3", reply.data["sum"])
        show("queues left", [q.qname for q in bus.queues() if q.qname.startswith("tq_")])

    with psycopg.connect(dsn, autocommit=True) as conn:
        console.print("[bold]create_view[/]: INSERT into a view posts (grant it to anyone)")
        view = conn.execute("SELECT mbus.create_view('demo_users')").fetchone()
        assert view is not None
        row = conn.execute(
            sql.SQL("INSERT INTO {} (data) VALUES (%s) RETURNING iid").format(
                sql.Identifier("public", "demo_users_q")
            ),
            (Jsonb({"via": "view"}),),
        ).fetchone()
        show(f"INSERT INTO {view[0]}", f"posted {row[0] if row else None}")
        roles = conn.execute(
            "SELECT array_agg(rolname ORDER BY rolname) FROM pg_roles WHERE rolname IN "
            "(mbus.queue_role('post', 'demo_users'), "
            "mbus.queue_role('consume', 'demo_users', 'default'))"
        ).fetchone()
        show("roles of demo_users", roles[0] if roles else None)

    console.print(
        "[bold]saga[/]: the tour booking of the original mbus API, once to success and once"
        " failing at ticket_from"
    )
    tour: object = _tour()
    tour.setup(dsn)  # type: ignore[attr-defined]
    with tour.workers(dsn):  # type: ignore[attr-defined]
        ok = tour.book(dsn, "vasya")  # type: ignore[attr-defined]
        bad = tour.book(dsn, "petya", "ticket_from")  # type: ignore[attr-defined]
        done = tour.wait_finished(dsn, [ok[1], bad[1]])  # type: ignore[attr-defined]
    for d in done:
        steps = ", ".join(f"{k}:{d.steps[k]['forward']}" for k in tour.STEPS)  # type: ignore[attr-defined]
        show(f"saga {d.saga_id}", f"{d.state} ({steps}){' - ' + d.reason if d.reason else ''}")
