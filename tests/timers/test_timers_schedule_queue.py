"""Schedules whose target is a queue: each occurrence posts one message, exactly once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from pgmbus.errors import InvalidArgument
from pgmbus.timers import scheduler
from pgmbus.timers import store_async as store
from tests.timers.conftest import Env, run

T0 = datetime(2030, 1, 1, 0, 0, tzinfo=UTC)
LATER = T0 + timedelta(days=1)  # every occurrence is claimable by then


async def _make(env: Env, key: str = "tick", **kw: Any) -> tuple[bool, store.Schedule]:
    async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as c:
        return await store.create_schedule(c, env.client.id, key, now=T0, start_at=T0, **kw)


async def _generate(env: Env, now: datetime, horizon_s: float = 60) -> int:
    async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as c:
        return await scheduler.generate(c, horizon_s=horizon_s, now=now)


def _drain(env: Env, queue: str) -> list[tuple[str, dict[str, Any]]]:
    """Consume every message of ``queue`` (as of ``LATER``): (iid, data) in post order."""
    out: list[tuple[str, dict[str, Any]]] = []
    while True:
        rows = env.sql("SELECT iid, data FROM mbus.consume(%s, 'default', %s)", (queue, LATER))
        if not rows:
            return out
        out.append((str(rows[0][0]), rows[0][1]))


def test_an_interval_schedule_posts_each_occurrence_to_the_queue_once(env: Env) -> None:
    env.sql("SELECT mbus.create_queue('mail')")
    created, schedule = run(_make(env, queue="mail", interval_s=20, context={"to": "ops"}))
    assert created and schedule.queue == "mail" and schedule.url is None
    assert run(_generate(env, T0)) == 3  # 0, 20, 40 within a 60 s horizon
    assert run(_generate(env, T0)) == 0  # a second scheduler run posts nothing new
    assert run(_generate(env, T0 + timedelta(seconds=30))) == 2  # 60, 80
    messages = _drain(env, "mail")
    times = [T0 + timedelta(seconds=s) for s in (0, 20, 40, 60, 80)]
    assert [datetime.fromisoformat(d["run_at"]) for _, d in messages] == times
    assert all(d["schedule_key"] == "tick" and d["context"] == {"to": "ops"} for _, d in messages)
    assert [iid for iid, _ in messages] == [
        f"schedule:{schedule.id}:{t.strftime('%Y-%m-%dT%H:%M:%S.000000Z')}" for t in times
    ]
    assert env.sql("SELECT count(*) FROM mbus.timer_callbacks")[0][0] == 0  # no HTTP callbacks


def test_a_queue_occurrence_is_claimable_at_its_time_not_before(env: Env) -> None:
    env.sql("SELECT mbus.create_queue('mail')")
    run(_make(env, queue="mail", interval_s=3600))
    assert run(_generate(env, T0 + timedelta(minutes=59), horizon_s=120)) == 2  # 00:00, 01:00
    early = env.sql(
        "SELECT iid FROM mbus.consume('mail', 'default', %s)", (T0 + timedelta(minutes=59),)
    )
    assert len(early) == 1 and early[0][0].endswith("T00:00:00.000000Z")
    assert (
        env.sql(
            "SELECT iid FROM mbus.consume('mail', 'default', %s)", (T0 + timedelta(minutes=59),)
        )
        == []
    )  # 01:00 is not due yet
    assert len(_drain(env, "mail")) == 1


def test_a_rerun_after_generated_until_moved_back_posts_nothing_twice(env: Env) -> None:
    # the record of posted occurrences guards even when generated_until does not
    env.sql("SELECT mbus.create_queue('mail')")
    run(_make(env, queue="mail", interval_s=20))
    assert run(_generate(env, T0)) == 3
    env.sql("UPDATE mbus.timer_schedules SET generated_until = %s", (T0,))
    assert run(_generate(env, T0)) == 0
    assert len(_drain(env, "mail")) == 3


def test_a_paused_schedule_posts_nothing(env: Env) -> None:
    env.sql("SELECT mbus.create_queue('mail')")
    run(_make(env, queue="mail", interval_s=20))
    env.sql("SELECT mbus.timer_schedule_set_paused(%s, 'tick', true, %s)", (env.client.id, T0))
    assert run(_generate(env, T0, horizon_s=600)) == 0
    assert _drain(env, "mail") == []


def test_a_rolled_back_pass_posts_nothing_and_the_next_one_posts_once(env: Env) -> None:
    env.sql("SELECT mbus.create_queue('mail')")
    run(_make(env, queue="mail", interval_s=20))

    (sid,) = env.sql("SELECT id FROM mbus.timer_schedules")[0]
    times = [T0, T0 + timedelta(seconds=20), T0 + timedelta(seconds=40)]

    async def rolled_back() -> int:
        async with await psycopg.AsyncConnection.connect(env.dsn) as c:
            posted = await store.schedule_materialize(c, sid, times, T0 + timedelta(minutes=1), T0)
            await c.rollback()  # the posts and their record go together
        return posted

    assert run(rolled_back()) == 3
    assert _drain(env, "mail") == []
    assert env.sql("SELECT count(*) FROM mbus.timer_schedule_posts")[0][0] == 0
    assert run(_generate(env, T0)) == 3
    assert len(_drain(env, "mail")) == 3


def test_a_target_is_exactly_one_existing_queue_or_a_url(env: Env) -> None:
    with pytest.raises(InvalidArgument, match="does not exist"):
        run(_make(env, queue="nope", interval_s=20))
    with pytest.raises(InvalidArgument, match="exactly one target"):
        run(_make(env, interval_s=20))
    env.sql("SELECT mbus.create_queue('mail')")
    with pytest.raises(InvalidArgument, match="exactly one target"):
        run(_make(env, url="http://127.0.0.1:9/s", queue="mail", interval_s=20))
    assert env.sql("SELECT count(*) FROM mbus.timer_schedules")[0][0] == 0


def test_a_schedule_whose_queue_was_dropped_is_paused_with_the_reason(env: Env) -> None:
    env.sql("SELECT mbus.create_queue('mail')")
    env.sql("SELECT mbus.create_queue('other')")
    run(_make(env, queue="mail", interval_s=20))
    run(_make(env, "fine", queue="other", interval_s=20))
    env.sql("SELECT mbus.drop_queue('mail')")
    assert run(_generate(env, T0)) == 3  # the other schedule's
    paused, reason = env.sql(
        "SELECT paused, paused_reason FROM mbus.timer_schedules WHERE schedule_key = 'tick'"
    )[0]
    assert paused is True and "queue mail does not exist" in reason
    assert len(_drain(env, "other")) == 3


def test_clean_forgets_old_posted_records_without_posting_again(env: Env) -> None:
    env.sql("SELECT mbus.create_queue('mail')")
    run(_make(env, queue="mail", interval_s=20))
    assert run(_generate(env, T0)) == 3
    env.sql("SELECT mbus.timer_clean(1, %s)", (T0 + timedelta(hours=23),))
    assert env.sql("SELECT count(*) FROM mbus.timer_schedule_posts")[0][0] == 3  # too recent
    env.sql("SELECT mbus.timer_clean(1, %s)", (T0 + timedelta(days=2),))
    assert env.sql("SELECT count(*) FROM mbus.timer_schedule_posts")[0][0] == 0
    assert run(_generate(env, T0)) == 0  # generated_until still guards
    assert len(_drain(env, "mail")) == 3
