"""The timers' guards below the HTTP layer: bounds and size limits as typed errors of the
SQL and Python APIs, results recorded per callback, crons that never fire refused or paused."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb

from pgmbus.errors import InvalidArgument
from pgmbus.timers import models, scheduler
from pgmbus.timers import store_async as store
from tests.timers.conftest import Env, run
from tests.timers.test_timers_store import T0, URL, claim, sqlstate_of

# the documented bounds (docs/timers.md)
MAX_DELAY = 2_592_000  # retry.delay_s, retry.max_delay_s: 30 days
MAX_FACTOR = 100
MAX_FAST_RETRIES = 10
MAX_STOP = 31_622_400  # stop_after_delay_s: 366 days
MAX_INTERVAL = 31_622_400  # interval_s: 366 days


_HTTP_ITEM = {"group_key": "g", "event_key": "e", "run_at": T0.isoformat(), "url": URL}


async def _create(env: Env, **kw: Any) -> tuple[bool, store.Callback]:
    async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as c:
        fields: dict[str, Any] = {"run_at": T0, "url": URL, "now": T0, **kw}
        return await store.create(c, env.client.id, "g", "e", **fields)


# -- every number has bounds, refused with a typed error ------------------------------------
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("retry", {"delay_s": 1e308}),
        ("retry", {"delay_s": MAX_DELAY + 1}),
        ("retry", {"delay_s": 0}),
        ("retry", {"factor": 1e308}),
        ("retry", {"factor": MAX_FACTOR + 0.5}),
        ("retry", {"max_delay_s": 1e308}),
        ("retry", {"max_delay_s": MAX_DELAY + 1}),
        ("retry", {"fast_retries": 11}),
        ("retry", {"fast_retries": 1.5}),
        ("retry", {"delay_s": "soon"}),
        ("retry", {"attempts": 3}),
        ("stop_after_delay_s", 1e308),
        ("stop_after_delay_s", float(MAX_STOP + 1)),
        ("stop_after_delay_s", float("nan")),
        ("run_at", datetime(9999, 1, 1, tzinfo=UTC)),
        ("originally_run_at", datetime(1969, 12, 31, tzinfo=UTC)),
    ],
)
def test_values_beyond_their_bounds_are_refused_and_nothing_is_stored(
    env: Env, field: str, value: Any
) -> None:
    with pytest.raises(InvalidArgument) as info:
        run(_create(env, **{field: value}))
    # NaN included: the client's argument checks refuse a non-finite number before the database
    assert info.value.sqlstate == "MB006"
    assert env.sql("SELECT count(*) FROM mbus.timer_callbacks")[0][0] == 0


def test_the_http_models_have_the_same_bounds() -> None:
    assert (models.MAX_DELAY_S, models.MAX_FACTOR, models.MAX_FAST_RETRIES) == (
        MAX_DELAY,
        MAX_FACTOR,
        MAX_FAST_RETRIES,
    )
    assert (models.MAX_STOP_AFTER_DELAY_S, models.MAX_INTERVAL_S) == (MAX_STOP, MAX_INTERVAL)


def test_values_at_their_bounds_are_accepted(env: Env) -> None:
    retry = {
        "kind": "exponential",
        "delay_s": MAX_DELAY,
        "factor": MAX_FACTOR,
        "max_delay_s": MAX_DELAY,
        "fast_retries": MAX_FAST_RETRIES,
    }
    created, cb = run(_create(env, retry=retry, stop_after_delay_s=MAX_STOP))
    assert created and cb.retry.factor == 100 and cb.stop_after_delay_s == MAX_STOP


def test_an_integral_float_is_an_integer_in_sql_and_refused_by_the_client(env: Env) -> None:
    # found by the property test below: "2.0" passed the check, then broke the integer cast
    env.sql(
        "SELECT * FROM mbus.timer_create(%s, 'g', 'e', %s, %s, p_retry => %s)",
        (env.client.id, T0, URL, Jsonb({"fast_retries": 2.0})),
    )
    stored = env.sql("SELECT fast_retries FROM mbus.timer_callbacks")
    assert stored == [(2,)]
    # the Python client and the HTTP model take a count as an int only
    with pytest.raises(InvalidArgument, match=r"^retry\.fast_retries must be an int"):
        run(_create(env, retry={"fast_retries": 2.0}))


def test_create_many_names_the_bad_item_and_creates_none(env: Env) -> None:
    good = {
        "client_id": env.client.id,
        "group_key": "g",
        "event_key": "a",
        "run_at": T0.isoformat(),
        "url": URL,
    }
    bad = {**good, "event_key": "b", "retry": {"factor": 1e308}}
    with pytest.raises(psycopg.Error) as info:
        env.sql("SELECT * FROM mbus.timer_create_many(%s)", (Jsonb([good, bad]),))
    assert info.value.sqlstate == "MB006"
    assert "item 2" in str(info.value) and "retry.factor" in str(info.value)
    assert env.sql("SELECT count(*) FROM mbus.timer_callbacks")[0][0] == 0


@pytest.mark.parametrize(
    ("change", "sqlstate", "message"),
    [
        ({"client_id": 1.5}, "MB006", "client_id must be a whole number"),
        ({"client_id": 1.0}, "MB006", "client_id must be a whole number"),  # ::bigint fails
        ({"client_id": 2**63}, "MB006", "client_id must be a whole number"),
        ({"client_id": -1}, "MB006", "client_id must be a whole number"),
        ({"client_id": "1"}, "MB006", "client_id must be a whole number"),
        ({"client_id": 987_654_321}, "MB002", "timer client 987654321 does not exist"),
        ({"schedule_id": 2.5}, "MB006", "schedule_id must be a whole number"),
        ({"schedule_id": 987_654_321}, "MB002", "schedule 987654321 does not exist"),
    ],
)
def test_an_unknown_or_malformed_client_or_schedule_is_a_typed_error(
    env: Env, change: dict[str, Any], sqlstate: str, message: str
) -> None:
    """They were cast errors (22P02, 22003) and foreign-key violations (23503) naming only a
    constraint; in a batch, the item is named and nothing is created."""
    good = {
        "client_id": env.client.id,
        "group_key": "g",
        "event_key": "a",
        "run_at": T0.isoformat(),
        "url": URL,
    }
    bad = {**good, "event_key": "b", **change}
    for items, prefix in (([bad], ""), ([good, bad], "item 2: ")):
        with pytest.raises(psycopg.Error) as info:
            env.sql("SELECT * FROM mbus.timer_create_many(%s)", (Jsonb(items),))
        assert info.value.sqlstate == sqlstate
        assert str(info.value).startswith(prefix + message)
    assert env.sql("SELECT count(*) FROM mbus.timer_callbacks")[0][0] == 0


def test_a_schedule_of_an_unknown_or_missing_client_is_a_typed_error(env: Env) -> None:
    base = "SELECT * FROM mbus.timer_schedule_create(%s, 'k', %s, p_interval_s => 60)"
    with pytest.raises(psycopg.Error, match="timer client 987654321 does not exist") as info:
        env.sql(base, (987_654_321, URL))
    assert info.value.sqlstate == "MB002"
    with pytest.raises(psycopg.Error, match="client_id is required") as info:
        env.sql(base, (None, URL))
    assert info.value.sqlstate == "MB006"
    assert env.sql("SELECT count(*) FROM mbus.timer_schedules")[0][0] == 0
    with pytest.raises(psycopg.Error, match="timer client 987654321") as info:
        env.sql("SELECT * FROM mbus.timer_create(%s, 'g', 'e', %s, %s)", (987_654_321, T0, URL))
    assert info.value.sqlstate == "MB002"


def test_schedule_numbers_have_bounds(env: Env) -> None:
    base = "SELECT * FROM mbus.timer_schedule_create(%s, 'k', %s, p_interval_s => %s"
    for interval in (0, MAX_INTERVAL + 1, 2**31 - 1):
        assert sqlstate_of(env, base + ")", (env.client.id, URL, interval)) == "MB006"
    assert (
        sqlstate_of(env, base + ", p_stop_after_delay_s => 1e308)", (env.client.id, URL, 60))
        == "MB006"
    )
    assert (
        sqlstate_of(
            env, base + ", p_retry => %s)", (env.client.id, URL, 60, Jsonb({"max_delay_s": 1e308}))
        )
        == "MB006"
    )
    assert (
        sqlstate_of(env, base + ", p_timezone => %s)", (env.client.id, URL, 60, "x" * 100_000))
        == "MB006"
    )
    assert env.sql("SELECT count(*) FROM mbus.timer_schedules")[0][0] == 0
    env.sql(base + ")", (env.client.id, URL, MAX_INTERVAL))


def test_clean_ttl_has_bounds(env: Env) -> None:
    assert sqlstate_of(env, "SELECT * FROM mbus.timer_clean(%s)", (2**31 - 1,)) == "MB006"


# -- results are recorded per callback ------------------------------------------------------
def _result(
    cb_id: int, attempt: int, now: datetime, outcome: str = "error", code: Any = 500
) -> dict[str, Any]:
    call = {
        "call": 0,
        "started_at": now.isoformat(),
        "finished_at": now.isoformat(),
        "outcome": outcome,
        "status_code": code,
    }
    return {"id": cb_id, "attempt": attempt, "dispatcher": "d", "outcome": outcome, "calls": [call]}


def _two_clients_claimed(env: Env) -> tuple[dict[int, int], int, int]:
    other = env.add_client("other")
    for client in (env.client.id, other.id):
        env.sql(
            "SELECT * FROM mbus.timer_create(%s, 'g', 'e', %s, %s, p_now => %s)",
            (client, T0, URL, T0),
        )
    ids = {r[0]: r[1] for r in env.sql("SELECT client_id, id FROM mbus.timer_callbacks")}
    attempts = {r[0]: r[1] for r in claim(env, "d", T0)}
    return attempts, ids[env.client.id], ids[other.id]


def test_a_row_stored_before_the_bounds_does_not_fail_the_batch(env: Env) -> None:
    attempts, bad, good = _two_clients_claimed(env)
    # a row written before the bounds existed (the table's CHECKs allow it)
    env.sql(
        "UPDATE mbus.timer_callbacks SET retry_kind = 'exponential', retry_delay_s = 1e308,"
        " retry_factor = 1e308, retry_max_delay_s = 1e308, stop_after_delay_s = 1e308,"
        " attempts = attempts + 5 WHERE id = %s",
        (bad,),
    )
    bad_attempt = attempts[bad] + 5
    now = T0 + timedelta(seconds=1)
    results = [_result(bad, bad_attempt, now), _result(good, attempts[good], now)]
    applied = env.sql("SELECT mbus.timer_record(%s, %s)", (json.dumps(results), now))[0][0]
    assert applied == 2
    rows = dict(env.sql("SELECT id, status FROM mbus.timer_callbacks"))
    assert rows == {bad: "failed", good: "pending"}  # a retry 1e308 s ahead is never
    run_at = env.sql("SELECT run_at FROM mbus.timer_callbacks WHERE id = %s", (good,))[0][0]
    assert run_at == now + timedelta(seconds=60)  # the other client's retry, as its policy says


def test_a_result_that_cannot_be_recorded_fails_alone(env: Env) -> None:
    attempts, bad, good = _two_clients_claimed(env)
    now = T0 + timedelta(seconds=1)
    results = [
        _result(bad, attempts[bad], now, "ok", 10**12),  # no integer status code
        _result(good, attempts[good], now, "ok", 200),
    ]
    applied = env.sql("SELECT mbus.timer_record(%s, %s)", (json.dumps(results), now))[0][0]
    assert applied == 2
    rows = {
        r[0]: r[1:]
        for r in env.sql(
            "SELECT id, status, last_status_code, last_error FROM mbus.timer_callbacks"
        )
    }
    assert rows[good] == ("notified", 200, None)
    assert rows[bad][0] == "failed" and "result not recordable" in rows[bad][2]
    assert (
        env.sql("SELECT count(*) FROM mbus.timer_attempts WHERE callback_id = %s", (good,))[0][0]
        == 1
    )


# -- size limits (settings) -------------------------------------------------------------------
def test_context_and_url_sizes_follow_the_settings(env: Env) -> None:
    big = {"text": "x" * 70_000}
    with pytest.raises(InvalidArgument, match=r"timers\.max_context_bytes"):
        run(_create(env, context=big))
    with pytest.raises(InvalidArgument, match=r"timers\.max_url_length"):
        run(_create(env, url="https://example.com/" + "a" * 5000))
    assert env.sql("SELECT count(*) FROM mbus.timer_callbacks")[0][0] == 0
    env.sql("SELECT mbus.set_setting('timers.max_context_bytes', '100000')")
    created, cb = run(_create(env, context=big))
    assert created and len(cb.context["text"]) == 70_000
    env.sql("SELECT mbus.set_setting('timers.max_context_bytes', '1000')")
    with pytest.raises(psycopg.Error) as info:
        env.sql(
            "SELECT mbus.timer_update(%s, 'g', 'e', p_context => %s)",
            (env.client.id, Jsonb({"t": "y" * 2000})),
        )
    assert info.value.sqlstate == "MB006"
    with pytest.raises(psycopg.Error) as info:
        env.sql(
            "SELECT * FROM mbus.timer_schedule_create(%s, 'k', %s, p_interval_s => 60,"
            " p_context => %s)",
            (env.client.id, URL, Jsonb({"t": "y" * 2000})),
        )
    assert info.value.sqlstate == "MB006"


def test_a_context_nested_too_deep_is_refused_by_every_sql_entry(env: Env) -> None:
    """The HTTP API refuses it (test_timers_api_guard); SQL callers must not store it either:
    the dispatcher's claim reads the context of every callback it claims, and Python's json
    stops near 1,000 levels, so one such callback failed the claim of its whole batch."""
    deep = "(repeat('{\"d\": ', 1500) || '{}' || repeat('}', 1500))::jsonb"  # built in SQL
    item = (
        f"jsonb_build_array(%s::jsonb || jsonb_build_object('client_id', %s::bigint,"
        f" 'context', {deep}))"
    )
    calls: list[tuple[str, tuple[Any, ...]]] = [
        (
            f"SELECT * FROM mbus.timer_create(%s, 'g', 'e', %s, %s, {deep})",
            (env.client.id, T0, URL),
        ),
        (
            f"SELECT count(*) FROM mbus.timer_create_many({item}, %s)",
            (Jsonb(_HTTP_ITEM), env.client.id, T0),
        ),
        (
            "SELECT * FROM mbus.timer_schedule_create(%s, 'k', %s, p_interval_s => 60,"
            f" p_context => {deep})",
            (env.client.id, URL),
        ),
    ]
    for sql, args in calls:
        with pytest.raises(psycopg.Error, match="100 levels") as info:
            env.sql(sql, args)
        assert info.value.sqlstate == "MB006"
    run(_create(env, context={"ok": [[1]]}))
    with pytest.raises(psycopg.Error, match="100 levels") as info:
        env.sql(f"SELECT mbus.timer_update(%s, 'g', 'e', p_context => {deep})", (env.client.id,))
    assert info.value.sqlstate == "MB006"
    assert env.sql("SELECT count(*) FROM mbus.timer_schedules")[0][0] == 0
    assert env.sql("SELECT context FROM mbus.timer_callbacks") == [({"ok": [[1]]},)]


# -- a cron that never fires --------------------------------------------------------------------
@pytest.mark.parametrize("cron", ["0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *"])
def test_a_cron_that_never_fires_is_refused_by_sql_and_python(env: Env, cron: str) -> None:
    assert (
        sqlstate_of(
            env,
            "SELECT * FROM mbus.timer_schedule_create(%s, 'k', %s, p_cron => %s)",
            (env.client.id, URL, cron),
        )
        == "MB006"
    )

    async def go() -> None:
        async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as c:
            await store.create_schedule(c, env.client.id, "k", URL, cron=cron)

    with pytest.raises(InvalidArgument, match="never fires"):
        run(go())
    assert env.sql("SELECT count(*) FROM mbus.timer_schedules")[0][0] == 0


def test_python_refuses_what_sql_cannot_tell(env: Env) -> None:
    async def go(cron: str) -> None:
        async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as c:
            await store.create_schedule(c, env.client.id, "k", URL, cron=cron)

    with pytest.raises(InvalidArgument, match="never fires"):
        run(go("0 0 30-31 2 *"))
    with pytest.raises(InvalidArgument, match="5 fields"):
        run(go("* * * * * *"))  # croniter reads a sixth field as seconds


def test_a_schedule_that_cannot_be_computed_is_paused_with_its_reason(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    # stored through SQL, whose check cannot read ranges; or stored before the checks
    env.sql(
        "SELECT * FROM mbus.timer_schedule_create(%s, 'broken', %s, p_cron => '0 0 30-31 2 *',"
        " p_start_at => %s, p_now => %s)",
        (env.client.id, URL, T0, T0),
    )
    env.sql(
        "SELECT * FROM mbus.timer_schedule_create(%s, 'fine', %s, p_interval_s => 60,"
        " p_start_at => %s, p_now => %s)",
        (env.client.id, URL, T0, T0),
    )
    env.sql(
        "SELECT * FROM mbus.timer_schedule_create(%s, 'old', %s, p_interval_s => 60,"
        " p_start_at => %s, p_now => %s)",
        (env.client.id, URL, T0, T0),
    )
    env.sql(
        "UPDATE mbus.timer_schedules SET cron = '0 0 31 2 *', interval_s = NULL"
        " WHERE schedule_key = 'old'"
    )

    async def generate(now: datetime) -> int:
        async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as c:
            return await scheduler.generate(c, horizon_s=60, now=now)

    with caplog.at_level(logging.WARNING, logger="pgmbus.timers.scheduler"):
        assert run(generate(T0)) == 1  # the fine schedule's run at T0
        for k in range(1, 6):
            run(generate(T0 + timedelta(seconds=k)))
    assert len([r for r in caplog.records if "paused" in r.getMessage()]) == 2  # once each

    async def listed() -> dict[str, store.Schedule]:
        async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as c:
            return {s.schedule_key: s for s in await store.list_schedules(c, env.client.id)}

    schedules = run(listed())
    for key in ("broken", "old"):
        reason = schedules[key].paused_reason
        assert schedules[key].paused is True and reason is not None and "never fires" in reason
    assert schedules["fine"].paused is False and schedules["fine"].paused_reason is None
    assert models.Schedule.from_record(schedules["old"]).paused_reason == reason

    async def resume() -> store.Schedule:
        async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as c:
            return await store.set_schedule_paused(c, env.client.id, "old", False)

    resumed = run(resume())
    assert resumed.paused is False and resumed.paused_reason is None


def test_a_schedule_whose_runs_cannot_be_created_is_paused_alone(env: Env) -> None:
    env.sql(
        "SELECT * FROM mbus.timer_schedule_create(%s, 'big', %s, p_interval_s => 60,"
        " p_context => %s, p_start_at => %s, p_now => %s)",
        (env.client.id, URL, Jsonb({"t": "x" * 5000}), T0, T0),
    )
    env.sql(
        "SELECT * FROM mbus.timer_schedule_create(%s, 'fine', %s, p_interval_s => 60,"
        " p_start_at => %s, p_now => %s)",
        (env.client.id, URL, T0, T0),
    )
    env.sql("SELECT mbus.set_setting('timers.max_context_bytes', '1000')")  # lowered later

    async def generate() -> int:
        async with await psycopg.AsyncConnection.connect(env.dsn, autocommit=True) as c:
            return await scheduler.generate(c, horizon_s=60, now=T0)

    assert asyncio.run(generate()) == 1
    rows = dict(env.sql("SELECT schedule_key, paused_reason FROM mbus.timer_schedules"))
    assert rows["fine"] is None and "timers.max_context_bytes" in rows["big"]


# -- property: any retry policy is refused with a typed error, or stored and recordable ---------
_NUMBER = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0, 1, 1e-300, 1e308, 100, 100.5, MAX_DELAY, MAX_DELAY + 1e-3, MAX_STOP]),
)
_RETRY = st.fixed_dictionaries(
    {},
    optional={
        "fast_retries": st.one_of(st.integers(-3, 12), st.sampled_from([1.5, 2.0])),
        "kind": st.sampled_from(["constant", "exponential", "linear"]),
        "delay_s": _NUMBER,
        "factor": _NUMBER,
        "max_delay_s": _NUMBER,
    },
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(retry=_RETRY, stop_after=_NUMBER, attempts=st.integers(1, 80))
def test_any_retry_policy_is_refused_or_recordable(
    env: Env, retry: dict[str, Any], stop_after: float, attempts: int
) -> None:
    env.sql("DELETE FROM mbus.timer_callbacks")
    in_model = True
    try:
        models.RetryPolicy.model_validate(retry)
        models.CallbackCreate.model_validate({**_HTTP_ITEM, "stop_after_delay_s": stop_after})
    except ValueError:
        in_model = False
    try:
        run(_create(env, retry=retry, stop_after_delay_s=stop_after))
    except InvalidArgument as exc:
        assert exc.sqlstate == "MB006"
        assert env.sql("SELECT count(*) FROM mbus.timer_callbacks")[0][0] == 0
        assert not in_model, (retry, stop_after, exc.message)  # the HTTP model agrees
        return
    assert in_model, (retry, stop_after)
    [(cb_id, _attempt, _)] = claim(env, "d", T0)
    env.sql("UPDATE mbus.timer_callbacks SET attempts = %s WHERE id = %s", (attempts, cb_id))
    now = T0 + timedelta(seconds=1)
    applied = env.sql(
        "SELECT mbus.timer_record(%s, %s)", (json.dumps([_result(cb_id, attempts, now)]), now)
    )[0][0]
    assert applied == 1
    status, run_at, deadline = env.sql(
        "SELECT status, run_at, originally_run_at + make_interval(secs => stop_after_delay_s)"
        " FROM mbus.timer_callbacks"
    )[0]
    assert status in ("pending", "failed")
    if status == "pending":
        assert now <= run_at <= min(deadline, now + timedelta(seconds=MAX_DELAY))


@pytest.mark.parametrize(
    ("time", "refused"),
    [
        (None, False),
        ("1970-01-01 00:00:00+00", False),
        ("1969-12-31 23:59:59.999999+00", True),
        ("9997-12-31 23:59:59.999999+00", False),
        ("9998-01-01 00:00:00+00", True),
        ("infinity", True),
        ("-infinity", True),
    ],
)
def test_timer_times_are_refused_exactly_outside_their_range(
    env: Env, time: str | None, refused: bool
) -> None:
    (problem,) = env.sql("SELECT mbus.timer_time_problem('run_at', %s::timestamptz)", (time,))[0]
    if refused:
        assert problem == "run_at must be from 1970-01-01 to before 9998-01-01 (UTC)"
    else:
        assert problem is None
