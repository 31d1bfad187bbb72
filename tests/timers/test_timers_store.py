"""The timers SQL API used directly (no Python layer): the design's rules, time as a parameter."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pgmbus.errors import translate
from tests.timers.conftest import Env

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
URL = "http://127.0.0.1:9/cb"


def sec(n: float) -> timedelta:
    return timedelta(seconds=n)


def create(
    env: Env,
    g: str,
    e: str,
    run_at: datetime,
    *,
    client_id: int | None = None,
    retry: dict[str, Any] | None = None,
    stop_after: float | None = None,
    now: datetime = T0,
) -> tuple[bool, dict[str, Any]]:
    rows = env.sql(
        "SELECT * FROM mbus.timer_create(%s, %s, %s, %s, %s, %s, %s, %s, NULL, %s)",
        (
            client_id or env.client.id,
            g,
            e,
            run_at,
            URL,
            Jsonb({"k": e}),
            None if retry is None else Jsonb(retry),
            stop_after,
            now,
        ),
    )
    return rows[0][0], rows[0][1]


def sqlstate_of(env: Env, query: str, params: Any) -> str | None:
    with pytest.raises(psycopg.Error) as info:
        env.sql(query, params)
    return translate(info.value).sqlstate


def status(env: Env, g: str, e: str) -> str:
    return str(
        env.sql(
            "SELECT status FROM mbus.timer_callbacks WHERE group_key = %s AND event_key = %s",
            (g, e),
        )[0][0]
    )


def claim(
    env: Env,
    name: str,
    now: datetime,
    limit: int = 100,
    lease: float = 10,
    buckets: list[int] | None = None,
) -> list[tuple[Any, ...]]:
    return env.sql(
        "SELECT id, attempt, event_key FROM mbus.timer_claim(%s, %s, %s, %s, %s)",
        (name, buckets if buckets is not None else list(range(64)), limit, lease, now),
    )


def record(
    env: Env,
    name: str,
    cb_id: int,
    attempt: int,
    outcome: str,
    now: datetime,
    code: int | None = None,
) -> int:
    calls = [
        {
            "call": 0,
            "started_at": now.isoformat(),
            "finished_at": now.isoformat(),
            "outcome": "error" if outcome == "error" else outcome,
            "status_code": code,
        }
    ]
    payload = [
        {"id": cb_id, "attempt": attempt, "dispatcher": name, "outcome": outcome, "calls": calls}
    ]
    return int(env.sql("SELECT mbus.timer_record(%s, %s)", (json.dumps(payload), now))[0][0])


# --- create, get, list ---------------------------------------------------------------------------
def test_create_is_idempotent_on_the_key_and_fills_defaults(env: Env) -> None:
    created, cb = create(env, "g", "e1", T0 + sec(60))
    assert created and cb["status"] == "pending" and cb["attempts"] == 0
    assert cb["retry"] == {
        "fast_retries": 2,
        "kind": "constant",
        "delay_s": 60,
        "factor": 2,
        "max_delay_s": 3600,
    }
    assert cb["stop_after_delay_s"] == 86400
    assert cb["originally_run_at"] == cb["run_at"]
    again, same = create(env, "g", "e1", T0 + sec(999))
    assert not again and same["id"] == cb["id"] and same["run_at"] == cb["run_at"]
    assert env.sql("SELECT count(*) FROM mbus.timer_callbacks")[0][0] == 1


def test_create_many_reports_each_item_and_repeats_in_one_batch(env: Env) -> None:
    cid = env.client.id
    items = [
        {"client_id": cid, "group_key": "g", "event_key": k, "run_at": T0.isoformat(), "url": URL}
        for k in ("a", "b", "a")
    ]
    rows = env.sql(
        "SELECT ord, created, callback->>'event_key' FROM mbus.timer_create_many(%s, %s)",
        (Jsonb(items), T0),
    )
    assert rows == [(1, True, "a"), (2, True, "b"), (3, False, "a")]
    rows = env.sql("SELECT ord, created FROM mbus.timer_create_many(%s, %s)", (Jsonb(items), T0))
    assert rows == [(1, False), (2, False), (3, False)]


def test_invalid_values_are_refused(env: Env) -> None:
    # typed errors (MB006 with the reason), not the table's CHECK violations
    assert (
        sqlstate_of(
            env, "SELECT mbus.timer_create(%s, 'g', 'e', now(), 'ftp://x/y')", (env.client.id,)
        )
        == "MB006"
    )
    assert (
        sqlstate_of(
            env, "SELECT mbus.timer_create(%s, 'g', 'a/b', now(), %s)", (env.client.id, URL)
        )
        == "MB006"
    )
    assert (
        sqlstate_of(
            env,
            "SELECT mbus.timer_create(%s, 'g', 'e', now(), %s, '{}', %s)",
            (env.client.id, URL, Jsonb({"kind": "linear"})),
        )
        == "MB006"
    )
    assert (
        sqlstate_of(
            env,
            "SELECT mbus.timer_create(%s, 'g', 'e', now(), %s, '{}', %s)",
            (env.client.id, URL, Jsonb({"fast_retries": 11})),
        )
        == "MB006"
    )


def test_get_list_and_paging_are_per_client(env: Env) -> None:
    other = env.add_client("other")
    for i in range(5):
        create(env, "g1" if i % 2 else "g2", f"e{i}", T0)
    create(env, "g1", "e1", T0, client_id=other.id)  # same key, other owner: separate
    assert env.sql("SELECT count(*) FROM mbus.timer_callbacks")[0][0] == 6
    assert sqlstate_of(env, "SELECT mbus.timer_get(%s, 'g2', 'e0')", (other.id,)) == "MB002"
    page1 = [
        r[0] for r in env.sql("SELECT mbus.timer_list(%s, NULL, NULL, 2, 0)", (env.client.id,))
    ]
    assert [c["event_key"] for c in page1] == ["e0", "e1"]
    page2 = [
        r[0]
        for r in env.sql(
            "SELECT mbus.timer_list(%s, NULL, NULL, 2, %s)", (env.client.id, page1[-1]["id"])
        )
    ]
    assert [c["event_key"] for c in page2] == ["e2", "e3"]
    g1 = [r[0]["event_key"] for r in env.sql("SELECT mbus.timer_list(%s, 'g1')", (env.client.id,))]
    assert g1 == ["e1", "e3"]
    env.sql("SELECT mbus.timer_cancel(%s, 'g2', 'e4', %s)", (env.client.id, T0))
    cancelled = env.sql("SELECT mbus.timer_list(%s, NULL, 'cancelled')", (env.client.id,))
    assert [r[0]["event_key"] for r in cancelled] == ["e4"]


# --- the design document's update, cancel, delete rules ------------------------------------------
def test_update_changes_pending_callbacks(env: Env) -> None:
    create(env, "g", "e", T0 + sec(600))
    new_at = T0 + sec(1200)
    cb = env.sql(
        "SELECT mbus.timer_update(%s, 'g', 'e', %s, NULL, 'http://127.0.0.1:9/new', "
        "'{\"x\": 1}', false, %s)",
        (env.client.id, new_at, T0),
    )[0][0]
    assert cb["url"] == "http://127.0.0.1:9/new" and cb["context"] == {"x": 1}
    assert datetime.fromisoformat(cb["run_at"]) == new_at
    assert datetime.fromisoformat(cb["originally_run_at"]) == new_at  # follows run_at
    orig = T0 + sec(1100)
    cb = env.sql(
        "SELECT mbus.timer_update(%s, 'g', 'e', NULL, %s, p_now => %s)", (env.client.id, orig, T0)
    )[0][0]
    assert datetime.fromisoformat(cb["originally_run_at"]) == orig
    assert datetime.fromisoformat(cb["run_at"]) == new_at


def test_update_of_cancelled_needs_i_ensure_pending_which_makes_it_pending(env: Env) -> None:
    create(env, "g", "e", T0 + sec(600))
    env.sql("SELECT mbus.timer_cancel(%s, 'g', 'e', %s)", (env.client.id, T0))
    q = (
        "SELECT mbus.timer_update(%s, 'g', 'e', p_url => 'http://127.0.0.1:9/x', "
        "p_i_ensure_pending => %s, p_now => %s)"
    )
    assert sqlstate_of(env, q, (env.client.id, False, T0)) == "MB008"
    assert status(env, "g", "e") == "cancelled"
    cb = env.sql(q, (env.client.id, True, T0))[0][0]
    assert cb["status"] == "pending" and cb["finished_at"] is None


def test_update_of_finished_callbacks_is_refused_even_with_the_flag(env: Env) -> None:
    _, cb = create(env, "g", "e", T0)
    (row,) = claim(env, "d", T0)
    assert record(env, "d", cb["id"], row[1], "ok", T0, 200) == 1
    assert status(env, "g", "e") == "notified"
    for flag in (False, True):
        assert (
            sqlstate_of(
                env,
                "SELECT mbus.timer_update(%s, 'g', 'e', p_url => %s, p_i_ensure_pending => %s)",
                (env.client.id, URL, flag),
            )
            == "MB008"
        )


def test_cancel_only_pending(env: Env) -> None:
    create(env, "g", "e", T0 + sec(600))
    cb = env.sql("SELECT mbus.timer_cancel(%s, 'g', 'e', %s)", (env.client.id, T0))[0][0]
    assert cb["status"] == "cancelled"
    assert sqlstate_of(env, "SELECT mbus.timer_cancel(%s, 'g', 'e')", (env.client.id,)) == "MB008"
    assert (
        sqlstate_of(env, "SELECT mbus.timer_cancel(%s, 'g', 'nope')", (env.client.id,)) == "MB002"
    )


def test_delete_refuses_pending_due_within_a_minute_unless_forced(env: Env) -> None:
    q = "SELECT mbus.timer_delete(%s, 'g', %s, %s, %s)"
    create(env, "g", "soon", T0 + sec(59))
    create(env, "g", "past", T0 - sec(10))
    create(env, "g", "later", T0 + sec(61))
    assert sqlstate_of(env, q, (env.client.id, "soon", False, T0)) == "MB008"
    assert sqlstate_of(env, q, (env.client.id, "past", False, T0)) == "MB008"
    env.sql(q, (env.client.id, "later", False, T0))
    env.sql(q, (env.client.id, "soon", True, T0))
    env.sql("SELECT mbus.timer_cancel(%s, 'g', 'past', %s)", (env.client.id, T0))
    env.sql(q, (env.client.id, "past", False, T0))  # cancelled: not pending, allowed
    assert env.sql("SELECT count(*) FROM mbus.timer_callbacks")[0][0] == 0


def test_change_log_records_user_changes_and_status_transitions(env: Env) -> None:
    _, cb = create(env, "g", "e", T0 + sec(120))
    env.sql(
        "SELECT mbus.timer_update(%s, 'g', 'e', %s, p_now => %s)", (env.client.id, T0 + sec(1), T0)
    )
    (row,) = claim(env, "d", T0 + sec(2))
    record(env, "d", cb["id"], row[1], "error", T0 + sec(2), 500)
    env.sql("SELECT mbus.timer_cancel(%s, 'g', 'e', %s)", (env.client.id, T0 + sec(3)))
    env.sql(
        "SELECT mbus.timer_update(%s, 'g', 'e', p_i_ensure_pending => true, p_now => %s)",
        (env.client.id, T0 + sec(4)),
    )
    env.sql("SELECT mbus.timer_delete(%s, 'g', 'e', true, %s)", (env.client.id, T0 + sec(5)))
    hist = env.sql("SELECT mbus.timer_history(%s, 'g', 'e')", (env.client.id,))[0][0]
    actions = [(c["action"], c["old_status"], c["new_status"]) for c in hist["changes"]]
    assert actions == [
        ("create", None, "pending"),
        ("update", "pending", "pending"),
        ("retry", "pending", "pending"),
        ("cancel", "pending", "cancelled"),
        ("update", "cancelled", "pending"),
        ("delete", "pending", None),
    ]
    assert "run_at" in hist["changes"][1]["changes"]
    assert hist["callback"] is None  # deleted; its log stays


# --- claims: order, late commits, past inserts, concurrency --------------------------------------
def test_claim_takes_due_callbacks_in_run_at_then_id_order(env: Env) -> None:
    create(env, "g", "c", T0 + sec(2))
    create(env, "g", "a", T0 + sec(1))
    create(env, "g", "b", T0 + sec(1))
    create(env, "g", "future", T0 + sec(100))
    rows = claim(env, "d", T0 + sec(5))
    assert [r[2] for r in rows] == ["a", "b", "c"]
    assert all(r[1] == 1 for r in rows)
    assert claim(env, "d2", T0 + sec(5)) == []  # claimed: not due for others


def test_late_committed_and_past_dated_callbacks_are_claimed(env: Env) -> None:
    create(env, "g", "early", T0)
    with psycopg.connect(env.dsn) as late:  # a transaction that commits after the claim
        late.execute(
            "SELECT mbus.timer_create(%s, 'g', 'late', %s, %s, p_now => %s)",
            (env.client.id, T0 - sec(30), URL, T0),
        )
        assert [r[2] for r in claim(env, "d", T0 + sec(1))] == ["early"]
        late.commit()
    create(env, "g", "past", T0 - sec(3600), now=T0 + sec(2))  # inserted with run_at long past
    create(env, "g", "next", T0 + sec(2))
    # no watermark: the late one (run_at before everything claimed) and the past one are found
    assert [r[2] for r in claim(env, "d", T0 + sec(3))] == ["past", "late", "next"]


def test_two_concurrent_claims_never_share_a_callback(env: Env) -> None:
    for i in range(50):
        create(env, "g", f"e{i}", T0)
    with psycopg.connect(env.dsn) as c1, psycopg.connect(env.dsn) as c2:
        q = "SELECT id FROM mbus.timer_claim(%s, %s, 30, 10, %s)"
        a = {r[0] for r in c1.execute(q, ("d1", list(range(64)), T0)).fetchall()}
        b = {r[0] for r in c2.execute(q, ("d2", list(range(64)), T0)).fetchall()}  # a still open
        c1.commit()
        c2.commit()
    assert len(a) == 30 and len(b) == 20 and not a & b


def test_an_expired_claim_is_claimed_again_and_its_late_result_ignored(env: Env) -> None:
    _, cb = create(env, "g", "e", T0)
    (first,) = claim(env, "d1", T0, lease=1)  # claimed until T0 + 3 s (3 calls)
    assert claim(env, "d2", T0 + sec(2)) == []
    (second,) = claim(env, "d2", T0 + sec(4))
    assert (first[1], second[1]) == (1, 2)
    assert record(env, "d1", cb["id"], 1, "ok", T0 + sec(5), 200) == 0  # stale: ignored
    assert status(env, "g", "e") == "pending"
    assert record(env, "d2", cb["id"], 2, "ok", T0 + sec(5), 200) == 1
    assert status(env, "g", "e") == "notified"
    attempts = env.sql("SELECT attempt, dispatcher FROM mbus.timer_attempts ORDER BY attempt")
    assert attempts == [(1, "d1"), (2, "d2")]  # both calls are in the history


def test_update_during_delivery_wins_over_the_result(env: Env) -> None:
    _, cb = create(env, "g", "e", T0)
    (row,) = claim(env, "d", T0)
    env.sql(
        "SELECT mbus.timer_update(%s, 'g', 'e', %s, p_now => %s)",
        (env.client.id, T0 + sec(600), T0),
    )
    assert record(env, "d", cb["id"], row[1], "ok", T0, 200) == 0
    assert status(env, "g", "e") == "pending"


# --- results and retries -------------------------------------------------------------------------
def test_results_map_to_statuses(env: Env) -> None:
    for key in ("ok", "reject", "refused"):
        create(env, "g", key, T0)
    rows = {r[2]: r for r in claim(env, "d", T0)}
    for key, row in rows.items():
        record(env, "d", row[0], row[1], key, T0)
    assert status(env, "g", "ok") == "notified"
    assert status(env, "g", "reject") == "rejected"
    assert status(env, "g", "refused") == "failed"
    assert (
        env.sql("SELECT count(*) FROM mbus.timer_callbacks WHERE finished_at = %s", (T0,))[0][0]
        == 3
    )


def test_constant_retries_until_stop_after_delay_then_failed(env: Env) -> None:
    _, cb = create(env, "g", "e", T0, retry={"kind": "constant", "delay_s": 60}, stop_after=150)
    now = T0
    run_ats = []
    for _ in range(3):
        (row,) = claim(env, "d", now)
        record(env, "d", cb["id"], row[1], "error", now, 500)
        (run_at,) = env.sql("SELECT run_at FROM mbus.timer_callbacks")[0]
        run_ats.append(run_at)
        now = run_at
    assert run_ats[:2] == [T0 + sec(60), T0 + sec(120)]
    assert status(env, "g", "e") == "failed"  # T0+180 would be past T0+150
    cb2 = env.sql("SELECT last_status_code, attempts FROM mbus.timer_callbacks")[0]
    assert cb2 == (500, 3)


def test_exponential_retries_grow_by_factor_up_to_max_delay(env: Env) -> None:
    _, cb = create(
        env,
        "g",
        "e",
        T0,
        retry={"kind": "exponential", "delay_s": 10, "factor": 3, "max_delay_s": 100},
    )
    now = T0
    delays = []
    for _ in range(4):
        (row,) = claim(env, "d", now)
        record(env, "d", cb["id"], row[1], "error", now)
        (run_at,) = env.sql("SELECT run_at FROM mbus.timer_callbacks")[0]
        delays.append((run_at - now).total_seconds())
        now = run_at
    assert delays == [10, 30, 90, 100]


# --- buckets -------------------------------------------------------------------------------------
def heartbeat(env: Env, name: str, now: datetime, lease: float = 10) -> list[int]:
    return list(env.sql("SELECT mbus.timer_heartbeat(%s, %s, %s)", (name, lease, now))[0][0])


def test_buckets_are_spread_and_taken_over_after_the_lease(env: Env) -> None:
    a = heartbeat(env, "a", T0)
    assert len(a) == 64
    b = heartbeat(env, "b", T0 + sec(1))  # joins: fair share is 32, nothing free yet
    assert b == []
    a = heartbeat(env, "a", T0 + sec(2))  # releases its surplus
    b = heartbeat(env, "b", T0 + sec(3))
    assert len(a) == 32 and len(b) == 32 and not set(a) & set(b)
    # a dies: its leases end at T0+12; b takes them over only then
    assert len(heartbeat(env, "b", T0 + sec(11))) == 32
    assert len(heartbeat(env, "b", T0 + sec(25))) == 64
    owners = env.sql("SELECT count(DISTINCT owner) FROM mbus.timer_buckets")[0][0]
    assert owners == 1


def test_claims_only_touch_the_given_buckets(env: Env) -> None:
    for i in range(40):
        create(env, "g", f"e{i}", T0)
    rows = env.sql("SELECT id, bucket_id FROM mbus.timer_callbacks")
    mine = [b for b in range(0, 64, 2)]
    got = {r[0] for r in claim(env, "d", T0, buckets=mine)}
    assert got == {r[0] for r in rows if r[1] in mine}


# --- cleanup -------------------------------------------------------------------------------------
def test_clean_removes_finished_callbacks_and_log_older_than_ttl(env: Env) -> None:
    old = T0 - timedelta(days=40)
    for key in ("done", "pending_old", "cancelled_new"):
        create(env, "g", key, old if key != "cancelled_new" else T0, now=old)
    (row,) = [r for r in claim(env, "d", old) if r[2] == "done"]
    record(env, "d", row[0], row[1], "ok", old)
    env.sql("SELECT mbus.timer_cancel(%s, 'g', 'cancelled_new', %s)", (env.client.id, T0))
    counts = env.sql("SELECT * FROM mbus.timer_clean(30, %s)", (T0,))[0]
    assert counts[0] == 1  # only the old finished one; pending is kept whatever its age
    left = {r[0] for r in env.sql("SELECT event_key FROM mbus.timer_callbacks")}
    assert left == {"pending_old", "cancelled_new"}
    assert counts[1] >= 3  # the old creates and the old status change
    assert (
        env.sql(
            "SELECT count(*) FROM mbus.timer_change_log WHERE at < %s", (T0 - timedelta(days=30),)
        )[0][0]
        == 0
    )


def test_clean_if_due_runs_once_a_day(env: Env) -> None:
    q = "SELECT mbus.timer_clean_if_due(30, 86400, %s)"
    assert env.sql(q, (T0,))[0][0] is True
    assert env.sql(q, (T0 + timedelta(hours=23),))[0][0] is False
    assert env.sql(q, (T0 + timedelta(hours=25),))[0][0] is True
