"""The timers' guards at the HTTP API: bounds (422), size limits (413), crons that never fire
and forbidden URLs refused at create, every error in the one shape, nothing stored on refusal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.timers.conftest import LOCAL, Env
from tests.timers.test_timers_api import Api, body, start_api


@pytest.fixture
def api(env: Env, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    monkeypatch.delenv("PGMBUS_ALLOW_NETWORKS", raising=False)
    a, stop = start_api(env)
    yield a
    stop()


_COUNT = {
    "timer_callbacks": "SELECT count(*) FROM mbus.timer_callbacks",
    "timer_schedules": "SELECT count(*) FROM mbus.timer_schedules",
}


def stored(env: Env, table: str = "timer_callbacks") -> int:
    return int(env.sql(_COUNT[table])[0][0])


def error_of(response: Any, status: int) -> dict[str, str]:
    """The response's error body, checked to be exactly {"error", "message"}."""
    assert response.status_code == status, response.text
    data: dict[str, str] = response.json()
    assert set(data) == {"error", "message"}, data
    assert isinstance(data["error"], str) and isinstance(data["message"], str)
    return data


SCHEDULE = {"schedule_key": "tick", "interval_s": 60, "url": "https://example.com/t"}


# -- one shape for every error ------------------------------------------------------------------
def test_every_error_has_the_one_shape(api: Api) -> None:
    import httpx

    with httpx.Client(base_url=api.base) as anon:
        assert error_of(anon.get("/v1/callbacks"), 401)["error"] == "unauthorized"
    with api.client("pmk_wrong") as wrong:
        assert error_of(wrong.post("/v1/callbacks", json=body("e")), 401)["error"] == (
            "unauthorized"
        )
    with api.client() as c:
        assert error_of(c.get("/v1/callbacks/orders/none"), 404)["error"] == "not_found"
        assert error_of(c.get("/v1/nowhere"), 404)["error"] == "not_found"
        assert c.post("/v1/callbacks", json=body("e")).status_code == 201
        assert c.post("/v1/callbacks/orders/e/cancel").status_code == 200
        assert error_of(c.post("/v1/callbacks/orders/e/cancel"), 409)["error"] == "invalid_state"
        bad = error_of(c.post("/v1/callbacks", json={"group_key": "g"}), 422)
        assert bad["error"] == "invalid_request" and "event_key" in bad["message"]
        assert error_of(
            c.post(
                "/v1/callbacks", content=b"{not json", headers={"content-type": "application/json"}
            ),
            422,
        )


def test_a_422_does_not_echo_the_input(api: Api) -> None:
    huge = "x" * 300_000  # three times, under the 1 MiB body limit (beyond it: 413)
    with api.client() as c:
        r = c.post("/v1/callbacks", json={**body(huge), huge: 1, "url": huge})
        error_of(r, 422)
        assert len(r.content) < 2000 and "x" * 100 not in r.text
        r = c.post("/v1/schedules", json={**SCHEDULE, "interval_s": None, "cron": huge})
        error_of(r, 422)
        assert len(r.content) < 2000 and "x" * 100 not in r.text


def test_the_openapi_schema_documents_the_error_shape(api: Api) -> None:
    with api.client() as c:
        spec = c.get("/openapi.json").json()
    create = spec["paths"]["/v1/callbacks"]["post"]["responses"]
    for status in ("401", "404", "409", "413", "422"):
        ref = create[status]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/ErrorBody"), (status, ref)
    assert "HTTPValidationError" not in spec.get("components", {}).get("schemas", {})


# -- bounds ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"retry": {"delay_s": 1e308}}, "delay_s"),
        ({"retry": {"factor": 1e308}}, "factor"),
        ({"retry": {"max_delay_s": 1e308}}, "max_delay_s"),
        ({"retry": {"kind": "exponential", "delay_s": 2_592_001}}, "delay_s"),
        ({"stop_after_delay_s": 1e308}, "stop_after_delay_s"),
        ({"run_at": "9999-06-01T00:00:00+00:00"}, "run_at"),
    ],
)
def test_callback_numbers_beyond_their_bounds_are_422(
    api: Api, extra: dict[str, Any], field: str
) -> None:
    with api.client() as c:
        data = error_of(c.post("/v1/callbacks", json={**body("e"), **extra}), 422)
    assert field in data["message"]
    assert stored(api.env) == 0


@pytest.mark.parametrize(
    "extra",
    [
        {"interval_s": 2**31 - 1},
        {"interval_s": 31_622_401},
        {"stop_after_delay_s": 1e308},
        {"retry": {"factor": 101}},
    ],
)
def test_schedule_numbers_beyond_their_bounds_are_422(api: Api, extra: dict[str, Any]) -> None:
    with api.client() as c:
        error_of(c.post("/v1/schedules", json={**SCHEDULE, **extra}), 422)
    assert stored(api.env, "timer_schedules") == 0


def test_list_paging_bounds_are_422(api: Api) -> None:
    with api.client() as c:
        error_of(c.get("/v1/callbacks", params={"after": str(2**64)}), 422)


# -- size limits ----------------------------------------------------------------------------------
def test_a_20_mb_context_is_refused_and_nothing_is_stored(api: Api) -> None:
    # 20 MB is over the service's body limit (1 MiB), refused before it is read; a context
    # under that limit but over max_context_bytes is refused by the timers' own check
    huge = {"blob": "x" * (20 * 1024 * 1024)}
    blob = {"blob": "x" * 100_000}
    with api.client() as c:
        data = error_of(c.post("/v1/callbacks", json={**body("e"), "context": huge}), 413)
        assert data["error"] == "too_large" and "1048576" in data["message"]
        data = error_of(c.post("/v1/callbacks", json={**body("e"), "context": blob}), 413)
        assert data["error"] == "too_large" and "65536" in data["message"]
        assert stored(api.env) == 0
        assert c.post("/v1/callbacks", json=body("e")).status_code == 201
        error_of(c.patch("/v1/callbacks/orders/e", json={"context": blob}), 413)
        assert c.get("/v1/callbacks/orders/e").json()["context"] == {}
        error_of(c.post("/v1/schedules", json={**SCHEDULE, "context": blob}), 413)
    assert stored(api.env, "timer_schedules") == 0


def test_limits_are_configurable(env: Env) -> None:
    api, stop = start_api(env, max_context_bytes=1000, max_url_length=100)
    try:
        with api.client() as c:
            error_of(c.post("/v1/callbacks", json={**body("a"), "context": {"t": "y" * 1000}}), 413)
            long_url = "https://example.com/" + "p" * 100
            assert (
                "url"
                in error_of(c.post("/v1/callbacks", json={**body("b"), "url": long_url}), 422)[
                    "message"
                ]
            )
            ok = c.post("/v1/callbacks", json={**body("c"), "context": {"t": "y" * 900}})
            assert ok.status_code == 201, ok.text
        assert stored(env) == 1
    finally:
        stop()


# -- crons that never fire ----------------------------------------------------------------------
@pytest.mark.parametrize("cron", ["0 0 31 2 *", "0 0 30-31 2 *", "0 0 31 4,6,9,11 *"])
def test_a_cron_that_never_fires_is_422_with_the_reason(api: Api, cron: str) -> None:
    with api.client() as c:
        r = c.post("/v1/schedules", json={**SCHEDULE, "interval_s": None, "cron": cron})
    assert "never fires" in error_of(r, 422)["message"]
    assert stored(api.env, "timer_schedules") == 0


def test_a_cron_with_a_seconds_field_is_422(api: Api) -> None:
    with api.client() as c:
        r = c.post("/v1/schedules", json={**SCHEDULE, "interval_s": None, "cron": "* * * * * *"})
    assert "5 fields" in error_of(r, 422)["message"]


def test_a_cron_with_no_run_before_end_at_is_422(api: Api) -> None:
    payload = {
        **SCHEDULE,
        "interval_s": None,
        "cron": "0 0 1 1 *",
        "start_at": "2031-02-01T00:00:00Z",
        "end_at": "2031-12-01T00:00:00Z",
    }
    with api.client() as c:
        assert "never fires" in error_of(c.post("/v1/schedules", json=payload), 422)["message"]


# -- forbidden URLs refused at create -------------------------------------------------------------
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://10.1.2.3/hook",
        "http://[::ffff:192.168.0.1]/hook",
        "http://[64:ff9b::7f00:1]/hook",
        "http://[::a01:203]/hook",
        "http://[2002:c0a8:1::1]/hook",
    ],
)
def test_forbidden_urls_are_refused_at_create(api: Api, url: str) -> None:
    with api.client() as c:
        data = error_of(c.post("/v1/callbacks", json={**body("e"), "url": url}), 422)
        assert data["error"] == "refused_url" and "not public" in data["message"]
        error_of(c.post("/v1/schedules", json={**SCHEDULE, "url": url}), 422)
        assert c.post("/v1/callbacks", json=body("ok")).status_code == 201
        error_of(c.patch("/v1/callbacks/orders/ok", json={"url": url}), 422)
        assert c.get("/v1/callbacks/orders/ok").json()["url"] == "https://example.com/hook"
    assert stored(api.env) == 1 and stored(api.env, "timer_schedules") == 0


@pytest.mark.parametrize(
    "url",
    [
        "http://xn--a.example/",  # a bad IDNA label
        "http://a..b/",  # an empty label, which no resolver takes
        f"http://{'a' * 64}.com/",  # a label over 63 bytes
        "https://example.com:99999/",  # a port no socket takes
    ],
)
def test_a_url_that_cannot_be_encoded_is_422_not_500(api: Api, url: str) -> None:
    # the guard's UnicodeError escaped as a plain-text 500
    with api.client() as c:
        data = error_of(c.post("/v1/callbacks", json={**body("e"), "url": url}), 422)
        assert data["error"] == "refused_url" and data["message"].startswith("invalid")
        error_of(c.post("/v1/schedules", json={**SCHEDULE, "url": url}), 422)
    assert stored(api.env) == 0 and stored(api.env, "timer_schedules") == 0


def test_a_host_that_does_not_resolve_now_is_accepted(api: Api) -> None:
    # DNS may answer by run time; the dispatcher checks again before every call
    with api.client() as c:
        r = c.post("/v1/callbacks", json={**body("e"), "url": "https://nowhere.invalid/x"})
    assert r.status_code == 201, r.text


def test_an_allow_listed_network_is_accepted_at_create(env: Env) -> None:
    api, stop = start_api(env, guard=LOCAL)
    try:
        with api.client() as c:
            r = c.post("/v1/callbacks", json={**body("e"), "url": "http://127.0.0.1:9/hook"})
            assert r.status_code == 201, r.text
            r = c.post("/v1/callbacks", json={**body("f"), "url": "http://10.0.0.1/hook"})
            error_of(r, 422)
    finally:
        stop()


# -- the check stays at dispatch ----------------------------------------------------------------
def test_dispatch_refuses_an_ipv6_form_of_an_allow_listed_ipv4(env: Env) -> None:
    # stored through SQL (no create-time check there): the dispatcher's own check refuses it,
    # and allow-listing 127.0.0.1 does not open 127.0.0.1 behind NAT64
    from tests.timers.test_timers_dispatcher import add, all_finished, dispatch_until, status_of

    add(env, "nat64", "http://[64:ff9b::7f00:1]:9/hook")
    dispatch_until(env, all_finished(env), guard=LOCAL)
    assert status_of(env, "nat64") == "failed"
    error = env.sql("SELECT last_error FROM mbus.timer_callbacks")[0][0]
    assert "embeds 127.0.0.1" in error and "not public" in error


def test_a_context_nested_too_deep_is_a_422_and_stores_nothing(api: Api, env: Env) -> None:
    """Main: 300 levels passed the size check, then failed to serialize: a text 500."""
    deep: Any = {}
    for _ in range(300):
        deep = {"a": deep}
    with api.client() as c:
        answer = error_of(c.post("/v1/callbacks", json=body("deep", context=deep)), 422)
        assert answer["error"] == "invalid_payload" and "100 levels" in answer["message"]
        assert stored(env) == 0
        fine: Any = {}
        for _ in range(99):
            fine = {"a": fine}
        assert c.post("/v1/callbacks", json=body("fine", context=fine)).status_code == 201
