"""Claiming ahead: claim cursors, giving unused claims back, never calling before run_at."""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from tests.plans import explain_to_client
from tests.timers.conftest import Env, Reply
from tests.timers.test_timers_dispatcher import (
    Server,
    add,
    all_finished,
    dispatch_until,
    fast_config,
    status_of,
)
from tests.timers.test_timers_store import T0, create, record, sec, status

ALL = list(range(64))


def claim_from(
    env: Env,
    name: str,
    now: datetime,
    after: tuple[datetime, int] | None,
    lookahead: float = 0.0,
    buckets: list[int] = ALL,
) -> list[tuple[Any, ...]]:
    return env.sql(
        "SELECT id, attempt, event_key, run_at"
        " FROM mbus.timer_claim(%s, %s, 100, 10, %s, %s, %s, %s)",
        (name, buckets, now, lookahead, after[0] if after else None, after[1] if after else None),
    )


def test_a_claim_from_a_cursor_skips_what_lies_before_it_and_a_rescan_finds_it(env: Env) -> None:
    create(env, "g", "a", T0 + sec(1))
    create(env, "g", "b", T0 + sec(2))
    rows = claim_from(env, "d", T0 + sec(2), None)
    assert [r[2] for r in rows] == ["a", "b"]
    cursor = (rows[-1][3], rows[-1][0])
    create(env, "g", "past", T0 - sec(60), now=T0 + sec(3))  # before the cursor
    create(env, "g", "c", T0 + sec(3), now=T0 + sec(3))
    assert [r[2] for r in claim_from(env, "d", T0 + sec(3), cursor)] == ["c"]
    assert [r[2] for r in claim_from(env, "d", T0 + sec(3), None)] == ["past"]  # the rescan


def test_lookahead_claims_callbacks_due_soon_and_holds_them_past_their_run_at(env: Env) -> None:
    create(env, "g", "soon", T0 + sec(1))
    create(env, "g", "later", T0 + sec(5))
    (row,) = claim_from(env, "d", T0, None, lookahead=2)
    assert row[2] == "soon"
    until = env.sql("SELECT claimed_until FROM mbus.timer_callbacks WHERE event_key = 'soon'")
    assert until[0][0] == T0 + sec(1) + sec(10) * 3  # from run_at, not from the claim
    # a dispatcher that took over the bucket meanwhile cannot claim it while the claim holds
    assert [r[2] for r in claim_from(env, "d2", T0 + sec(30), None)] == ["later"]
    assert [r[2] for r in claim_from(env, "d2", T0 + sec(31), None)] == ["soon"]


def test_unused_claims_are_given_back_with_their_attempt_number(env: Env) -> None:
    _, cb = create(env, "g", "e", T0)
    (row,) = claim_from(env, "d1", T0, None)
    assert row[1] == 1
    give_back = "SELECT mbus.timer_unclaim(%s, %s, %s)"
    assert env.sql(give_back, ("d2", [cb["id"]], [1]))[0][0] == 0  # not its claim
    assert env.sql(give_back, ("d1", [cb["id"]], [2]))[0][0] == 0  # not this attempt
    assert env.sql(give_back, ("d1", [cb["id"]], [1]))[0][0] == 1
    (again,) = claim_from(env, "d2", T0, None)
    assert again[1] == 1  # nobody was called with attempt 1: it is used again
    assert env.sql(give_back, ("d1", [cb["id"]], [1]))[0][0] == 0  # d2 holds it now
    assert record(env, "d2", cb["id"], 1, "ok", T0, 200) == 1
    assert status(env, "g", "e") == "notified"


def test_claimed_ahead_callbacks_are_never_called_before_their_run_at(
    env: Env, http_server: Server
) -> None:
    server = http_server()
    now = datetime.now(UTC)
    for i in range(20):  # all within the lookahead: claimed at once, held until due
        add(env, f"e{i}", server.url, run_at=now + timedelta(milliseconds=600 + 40 * i))
    dispatchers = dispatch_until(env, all_finished(env), fast_config(lookahead_s=3.0))
    assert dispatchers[0].stats.claimed == 20
    assert len(server.received) == 20
    for r in server.received:
        assert r.at >= datetime.fromisoformat(r.json["run_at"]).timestamp(), r.json


def test_an_overloaded_dispatcher_gives_late_claims_back_instead_of_letting_them_expire(
    env: Env, http_server: Server
) -> None:
    server = http_server(default=Reply(200, delay_s=0.2))
    now = datetime.now(UTC)
    for i in range(8):  # claimed ahead together, due together, one worker: most start late
        add(env, f"e{i}", server.url, run_at=now + timedelta(seconds=1))
    config = fast_config(concurrency=1, timeout_s=1.0, claim_slack_s=0.3, lookahead_s=2.0)
    (dispatcher,) = dispatch_until(env, all_finished(env), config)
    assert dispatcher.stats.given_back >= 1
    calls = Counter(r.headers["webhook-id"] for r in server.received)
    assert len(calls) == 8 and set(calls.values()) == {1}  # each called once
    assert {r.headers["pgmbus-attempt"] for r in server.received} == {"1"}


def test_a_change_to_a_callback_claimed_ahead_stops_its_call_at_the_old_time(
    env: Env, http_server: Server
) -> None:
    """Cancel, delete and update reach a dispatcher holding the claim in memory: the cancelled
    and deleted callbacks are never called, the moved one only at its new time."""
    server = http_server()
    run_at = datetime.now(UTC) + timedelta(seconds=2)
    keys = ["kept", "cancelled", "deleted", "moved"]
    for key in keys:
        add(env, key, server.url, run_at=run_at)
    moved_to = run_at + timedelta(seconds=1.5)
    changed = False

    def done() -> bool:
        nonlocal changed
        if not changed:
            claimed = env.sql(
                "SELECT count(*) FROM mbus.timer_callbacks WHERE claimed_by IS NOT NULL"
            )[0][0]
            if claimed < len(keys):
                return False
            client = env.client.id
            env.sql("SELECT mbus.timer_cancel(%s, 'g', 'cancelled')", (client,))
            env.sql("SELECT mbus.timer_delete(%s, 'g', 'deleted', true)", (client,))
            env.sql("SELECT mbus.timer_update(%s, 'g', 'moved', %s)", (client, moved_to))
            changed = True
        return bool(
            env.sql(
                "SELECT count(*) FILTER (WHERE status = 'notified') = 2 FROM mbus.timer_callbacks"
            )[0][0]
        )

    (dispatcher,) = dispatch_until(env, done, fast_config(lookahead_s=5.0))
    assert changed and dispatcher.stats.discarded == 3
    calls = Counter(r.json["event_key"] for r in server.received)
    assert calls == {"kept": 1, "moved": 1}
    (moved,) = [r for r in server.received if r.json["event_key"] == "moved"]
    assert moved.at >= moved_to.timestamp()
    assert moved.headers["pgmbus-attempt"] == "2"  # the dropped claim's number is not reused
    assert status_of(env, "cancelled") == "cancelled"


def test_a_claim_never_locks_a_callback_it_does_not_claim(env: Env) -> None:
    """FOUND_BUGS timers 1: a row updated and committed by another transaction while a claim
    runs was locked (its new version) but not claimed, so nobody could claim it until the
    claim's transaction ended. Here 2,000 callbacks due earlier are held by a third session, so
    every claim walks over them (a wide window), while another session keeps updating the one
    free callback; each claim must either return it or hold no lock on it."""
    create(env, "x", "free", T0 - sec(1))
    env.sql(
        "SELECT mbus.timer_create(%s, 'g', 'e' || i, %s, %s, '{}', NULL, NULL, NULL, %s) "
        "FROM generate_series(1, 2000) AS i",
        (env.client.id, T0 - sec(60), "http://127.0.0.1:9/cb", T0),
    )
    [(free,)] = env.sql("SELECT id FROM mbus.timer_callbacks WHERE event_key = 'free'")
    with psycopg.connect(env.dsn) as holder, psycopg.connect(env.dsn) as claimer:
        holder.execute("SELECT id FROM mbus.timer_callbacks WHERE id <> %s FOR UPDATE", (free,))
        stop = threading.Event()

        def churn() -> None:
            with psycopg.connect(env.dsn, autocommit=True) as w:
                while not stop.is_set():
                    w.execute(
                        "UPDATE mbus.timer_callbacks SET context = context WHERE id = %s",
                        (free,),
                    )

        worker = threading.Thread(target=churn)
        worker.start()
        claimed = stranded = 0
        deadline = time.monotonic() + 4
        try:
            while time.monotonic() < deadline:
                rows = claimer.execute(
                    "SELECT id FROM mbus.timer_claim('d', %s, 1, 10, %s)", (ALL, T0)
                ).fetchall()
                if rows == [(free,)]:
                    claimed += 1
                else:
                    assert rows == []
                    mine = claimer.execute(
                        "SELECT c.xmax::text = pg_current_xact_id_if_assigned()::xid::text "
                        "FROM mbus.timer_callbacks AS c WHERE c.id = %s",
                        (free,),
                    ).fetchone()
                    stranded += mine == (True,)
                claimer.rollback()
        finally:
            stop.set()
            worker.join()
        assert claimed > 0
        assert stranded == 0, f"{stranded} claims locked the free callback without claiming it"


def test_the_claim_walks_the_due_index_and_updates_through_the_primary_key(env: Env) -> None:
    env.sql(
        "SELECT mbus.timer_create(%s, 'g', 'e' || i, %s, %s, '{}', NULL, NULL, NULL, %s) "
        "FROM generate_series(1, 3000) AS i",
        (env.client.id, T0 - sec(60), "http://127.0.0.1:9/cb", T0),
    )
    env.sql("ANALYZE mbus.timer_callbacks")
    with psycopg.connect(env.dsn) as conn:
        plans = explain_to_client(conn)
        rows = conn.execute(
            "SELECT id FROM mbus.timer_claim('d', %s, 10, 10, %s)", (ALL, T0)
        ).fetchall()
        conn.rollback()
    assert len(rows) == 10
    text = next(p for p in plans if "timer_callbacks_due on" in p)
    plan = text[text.index("ORDER BY k.run_at, k.id") :]  # the plan, after the query text
    assert "Index Scan using timer_callbacks_due on timer_callbacks" in plan, plan
    assert "Index Scan using timer_callbacks_pkey on timer_callbacks" in plan, plan
    assert "Seq Scan" not in plan and "Bitmap" not in plan, plan
    # the only sort is of the claimed rows (at most p_limit), for the result's order
    assert [line.strip() for line in plan.splitlines() if "Sort Key" in line] == [
        "Sort Key: k.run_at, k.id"
    ], plan
