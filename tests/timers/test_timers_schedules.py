"""Recurring schedules: cron in time zones, intervals, no duplicates with two schedulers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from pgmbus.errors import InvalidArgument
from pgmbus.timers import scheduler
from pgmbus.timers import store_async as store
from tests.timers.conftest import Env, run

T0 = datetime(2030, 1, 1, 0, 0, tzinfo=UTC)
URL = "http://127.0.0.1:9/s"


def test_cron_occurrences_follow_the_time_zone_across_dst() -> None:
    lo = datetime(2026, 3, 27, 0, 0, tzinfo=UTC)
    times = scheduler.occurrences(
        cron="30 9 * * *",
        timezone="Europe/Berlin",
        interval_s=None,
        start_at=lo,
        lo=lo,
        hi=lo + timedelta(days=4),
    )
    # 09:30 in Berlin is 08:30 UTC before 29 March 2026 and 07:30 UTC from then on
    assert [t.astimezone(UTC).strftime("%d %H:%M") for t in times] == [
        "27 08:30",
        "28 08:30",
        "29 07:30",
        "30 07:30",
    ]


def test_interval_occurrences_count_from_start() -> None:
    start = T0 + timedelta(seconds=5)
    times = scheduler.occurrences(
        cron=None,
        timezone="UTC",
        interval_s=10,
        start_at=start,
        lo=T0 + timedelta(seconds=20),
        hi=T0 + timedelta(seconds=50),
    )
    assert [int((t - T0).total_seconds()) for t in times] == [25, 35, 45]


def test_invalid_cron_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        scheduler.check_cron("61 * * * *")


async def _make(env: Env, **kw: Any) -> None:
    async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as c:
        await store.create_schedule(c, env.client.id, "tick", URL, now=T0, start_at=T0, **kw)


async def _generate(env: Env, now: datetime, horizon_s: float = 60) -> int:
    async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as c:
        return await scheduler.generate(c, horizon_s=horizon_s, now=now)


def keys(env: Env) -> list[str]:
    return [r[0] for r in env.sql("SELECT event_key FROM mbus.timer_callbacks ORDER BY run_at")]


def test_generation_is_ahead_of_time_and_never_repeats(env: Env) -> None:
    run(_make(env, interval_s=20))
    assert run(_generate(env, T0)) == 3  # 0, 20, 40 within a 60 s horizon
    assert run(_generate(env, T0)) == 0
    assert run(_generate(env, T0 + timedelta(seconds=30))) == 2  # 60, 80
    assert keys(env) == [
        f"tick@2030-01-01T00:0{m}:{s:02d}Z" for m, s in [(0, 0), (0, 20), (0, 40), (1, 0), (1, 20)]
    ]
    (sid,) = env.sql("SELECT count(DISTINCT schedule_id) FROM mbus.timer_callbacks")[0]
    assert sid == 1


def test_two_schedulers_at_once_create_no_duplicates(env: Env) -> None:
    run(_make(env, interval_s=1))

    async def both() -> list[int]:
        return list(await asyncio.gather(*(_generate(env, T0, horizon_s=600) for _ in range(4))))

    counts = run(both())
    assert sum(counts) == 600
    (n, distinct) = env.sql("SELECT count(*), count(DISTINCT run_at) FROM mbus.timer_callbacks")[0]
    assert n == distinct == 600


def test_pause_removes_generated_callbacks_and_resume_restarts_from_now(env: Env) -> None:
    run(_make(env, cron="*/1 * * * *"))
    assert run(_generate(env, T0, horizon_s=300)) == 5
    env.sql(
        "SELECT mbus.timer_schedule_set_paused(%s, 'tick', true, %s)",
        (env.client.id, T0 + timedelta(seconds=30)),
    )
    assert keys(env) == []
    assert run(_generate(env, T0 + timedelta(minutes=10))) == 0
    env.sql(
        "SELECT mbus.timer_schedule_set_paused(%s, 'tick', false, %s)",
        (env.client.id, T0 + timedelta(minutes=10)),
    )
    assert run(_generate(env, T0 + timedelta(minutes=10), horizon_s=120)) == 2
    assert keys(env) == ["tick@2030-01-01T00:10:00Z", "tick@2030-01-01T00:11:00Z"]
    env.sql("SELECT mbus.timer_schedule_delete(%s, 'tick', %s)", (env.client.id, T0))
    assert keys(env) == []
    assert env.sql("SELECT count(*) FROM mbus.timer_schedules")[0][0] == 0


def test_missed_occurrences_older_than_stop_after_delay_are_skipped(env: Env) -> None:
    run(_make(env, interval_s=60, stop_after_delay_s=120))
    assert run(_generate(env, T0 + timedelta(hours=1), horizon_s=0.5)) == 3  # 58, 59, 60 min
    assert keys(env)[0] == "tick@2030-01-01T00:58:00Z"


def test_end_at_stops_generation(env: Env) -> None:
    run(_make(env, interval_s=10, end_at=T0 + timedelta(seconds=25)))
    assert run(_generate(env, T0, horizon_s=600)) == 3
    assert run(_generate(env, T0 + timedelta(seconds=100), horizon_s=600)) == 0
