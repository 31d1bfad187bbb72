"""The dashboard in a real browser (chromium via Playwright): pages, numbers, actions."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.ops import state
from tests.ops.browser import cell, chromium, goto, login
from tests.ops.conftest import ADMIN_SCOPES, Service, start

pytestmark = pytest.mark.browser


@pytest.fixture
def known(ops_dsn: str) -> Iterator[tuple[Service, dict[str, Any]]]:
    made = state.build(ops_dsn)
    base, stop = start(ops_dsn, late_after_s=60)
    svc = Service(ops_dsn, base)
    svc.add_key("admin", ADMIN_SCOPES)
    svc.add_key("viewer", ["queues:read:*", "streams:read:*", "timers:read:*"])
    try:
        yield svc, made
    finally:
        stop()


@pytest.fixture
def page() -> Iterator[Page]:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        yield context.new_page()
        context.close()


def test_replay_from_the_page_moves_the_message(
    known: tuple[Service, dict[str, Any]], page: Page
) -> None:
    """Fast tier: one page load and one action."""
    svc, _ = known
    t0 = time.monotonic()
    [(dmq_id, iid)] = svc.sql("SELECT dmq_id, iid FROM mbus.dmq WHERE qname = 'mail'")
    login(page, svc.base, svc.keys["admin"], "dmq")
    rows = page.locator("#dmq-table tbody tr[data-dmq-id]")
    assert rows.count() == svc.value("SELECT count(*) FROM mbus.dmq") == 2
    page.click(f"#dmq-table tr[data-dmq-id='{dmq_id}']")
    assert '"to": "u0@example.org"' in page.inner_text("#dmq-detail-body")
    page.click("#dmq-replay")
    page.wait_for_selector(f"#dmq-table tr[data-dmq-id='{dmq_id}']", state="detached")
    assert "replayed dead message" in page.inner_text("#status")
    assert svc.value("SELECT count(*) FROM mbus.dmq WHERE dmq_id = %s", (dmq_id,)) == 0
    assert page.inner_text("#status").endswith(f" as {iid}")
    assert svc.value("SELECT mbus.peek('mail', %s)", (iid,)) is True
    assert time.monotonic() - t0 < 20


@pytest.mark.slow
def test_every_page_shows_what_sql_says(
    known: tuple[Service, dict[str, Any]], page: Page, tmp_path: Path
) -> None:
    svc, made = known
    shots = Path(os.environ.get("PGMBUS_SCREENSHOTS", str(tmp_path)))
    shots.mkdir(parents=True, exist_ok=True)
    login(page, svc.base, svc.keys["admin"], "queues")
    assert "admin (write)" in page.inner_text("#whoami")
    for q, c, depth, ready, delayed, leased, dmq in svc.sql(
        "SELECT qname, cname, depth, ready, delayed, leased, dmq FROM mbus.queue_stats()"
    ):
        row = f"#queues-table tr[data-queue='{q}'][data-consumer='{c}']"
        assert cell(page, f"{row} .depth") == str(depth)
        assert cell(page, f"{row} .ready") == str(ready)
        assert cell(page, f"{row} .delayed") == str(delayed)
        assert cell(page, f"{row} .leased") == str(leased)
        assert cell(page, f"{row} .dead") == str(dmq)
    # it refreshes by itself: a post through SQL shows without a click
    svc.sql("SELECT mbus.post('orders', '{\"n\": 1000}')")
    page.wait_for_function(
        "document.querySelector(\"#queues-table tr[data-queue='orders'][data-consumer='audit']"
        " .depth\").textContent === '7'",
        timeout=10_000,
    )
    page.screenshot(path=str(shots / "dashboard-queues.png"), full_page=True)

    goto(page, "dmq")
    page.click("#dmq-table tbody tr[data-dmq-id] >> nth=0")
    page.screenshot(path=str(shots / "dashboard-dmq.png"), full_page=True)

    goto(page, "streams")
    for group, slot, pending, dead in svc.sql(
        "SELECT group_name, slot, pending_events, dead_letters FROM mbus.group_status()"
    ):
        row = f"#groups-table tr[data-group='{group}'][data-slot='{slot}']"
        assert cell(page, f"{row} .unread") == str(pending)
        assert cell(page, f"{row} .dead") == str(dead)
    page.fill("#groups-table input[data-seek='billing']", "now")
    page.click("#groups-table tr[data-group='billing'] button")
    page.wait_for_function(
        "document.querySelector(\"#groups-table tr[data-group='billing'] .unread\")"
        ".textContent === '0'",
        timeout=10_000,
    )
    assert (
        svc.value("SELECT pending_events FROM mbus.group_status() WHERE group_name = 'billing'")
        == 0
    )
    page.screenshot(path=str(shots / "dashboard-streams.png"), full_page=True)

    goto(page, "timers")
    [(pending, due, late, failed)] = svc.sql(
        "SELECT count(*) FILTER (WHERE status = 'pending'),"
        " count(*) FILTER (WHERE status = 'pending' AND run_at <= now()),"
        " count(*) FILTER (WHERE status = 'pending' AND run_at <= now() - interval '60 s'),"
        " count(*) FILTER (WHERE status = 'failed') FROM mbus.timer_callbacks"
    )
    row = "#timers-table tr[data-client='shop']"
    assert cell(page, f"{row} .pending") == str(pending) == "3"
    assert cell(page, f"{row} .due") == str(due) == "2"
    assert cell(page, f"{row} .late") == str(late) == "1"
    assert cell(page, f"{row} .failed") == str(failed) == "1"
    page.click("#callbacks-table tr[data-callback='shop/carts/broken']")
    page.wait_for_selector("#cb-detail:not([hidden]) #cb-attempts tbody tr >> nth=1")
    attempts = page.inner_text("#cb-attempts")
    assert "error" in attempts and "reject" in attempts and "410" in attempts
    page.screenshot(path=str(shots / "dashboard-timers.png"), full_page=True)

    goto(page, "sagas")
    first, second = made["sagas"]
    assert cell(page, f"#sagas-table tr[data-saga='{first}'] .saga-state") == "running"
    assert cell(page, f"#sagas-table tr[data-saga='{second}'] .saga-state") == "compensating"
    assert "room: cancelled" in page.inner_text(f"#sagas-table tr[data-saga='{second}']")
    page.screenshot(path=str(shots / "dashboard-sagas.png"), full_page=True)

    goto(page, "schedules")
    assert "cron 0 3 * * *" in page.inner_text("#schedules-table tr[data-schedule='shop/nightly']")
    page.screenshot(path=str(shots / "dashboard-schedules.png"), full_page=True)


@pytest.mark.slow
def test_read_only_key_sees_but_cannot_act(
    known: tuple[Service, dict[str, Any]], page: Page
) -> None:
    svc, _ = known
    login(page, svc.base, svc.keys["viewer"], "dmq")
    assert "viewer (read-only)" in page.inner_text("#whoami")
    page.click("#dmq-table tbody tr[data-dmq-id] >> nth=0")
    assert page.is_disabled("#dmq-replay") and page.is_disabled("#dmq-delete")
    goto(page, "streams")
    assert page.is_disabled("#groups-table tr[data-group='billing'] button")
    # the server refuses too, whatever the page does
    status = page.evaluate(
        "fetch('/v1/queues/mail/dmq/1/replay', {method: 'POST', headers: {authorization: "
        f"'Bearer {svc.keys['viewer']}'}}}}).then(r => r.status)"
    )
    assert status == 403
    assert svc.value("SELECT count(*) FROM mbus.dmq") == 2


@pytest.mark.slow
def test_delete_from_the_page(known: tuple[Service, dict[str, Any]], page: Page) -> None:
    svc, _ = known
    [(dmq_id,)] = svc.sql("SELECT dmq_id FROM mbus.dmq WHERE qname = 'orders'")
    login(page, svc.base, svc.keys["admin"], "dmq")
    page.on("dialog", lambda d: d.accept())
    page.click(f"#dmq-table tr[data-dmq-id='{dmq_id}']")
    page.click("#dmq-delete")
    page.wait_for_selector(f"#dmq-table tr[data-dmq-id='{dmq_id}']", state="detached")
    assert svc.value("SELECT count(*) FROM mbus.dmq WHERE dmq_id = %s", (dmq_id,)) == 0


@pytest.mark.slow
def test_bad_key_says_so(ops_dsn: str, page: Page) -> None:
    base, stop = start(ops_dsn)
    try:
        page.goto(base + "/")
        page.fill("#key", "pmk_wrong")
        page.click("#login button[type=submit]")
        page.wait_for_selector("#status.error")
        assert "401 unauthorized: unknown API key" in page.inner_text("#status")
    finally:
        stop()


@pytest.mark.slow
def test_swagger_ui_and_redoc_render_offline(ops_dsn: str, page: Page) -> None:
    base, stop = start(ops_dsn)
    external: list[str] = []
    local = (base, f"blob:{base}", "data:")
    page.on("request", lambda r: None if r.url.startswith(local) else external.append(r.url))
    try:
        page.goto(base + "/docs")
        page.wait_for_selector(".opblock", timeout=20_000)
        assert page.locator(".opblock").count() > 40
        assert page.locator(".opblock-tag", has_text="queues").count() == 1
        page.goto(base + "/redoc")
        page.wait_for_selector("text=Lease the group", timeout=20_000)
        assert external == [], external
    finally:
        stop()


@pytest.mark.slow
def test_pause_and_resume_from_the_queues_page(
    known: tuple[Service, dict[str, Any]], page: Page
) -> None:
    svc, _ = known
    login(page, svc.base, svc.keys["admin"], "queues")
    row = "#queues-table tr[data-queue='orders'][data-consumer='audit']"
    posted = svc.value("SELECT posted FROM mbus.queue_counters('orders') WHERE cname = 'audit'")
    assert cell(page, f"{row} td.posted") == str(posted)
    page.click(f"{row} button.pause")
    page.wait_for_selector(f"{row} button.pause:has-text('resume')")
    assert svc.sql("SELECT qname, cname FROM mbus.queue_pause") == [("orders", "audit")]
    page.click(f"{row} button.pause")
    page.wait_for_selector(f"{row} button.pause:has-text('pause')")
    assert svc.sql("SELECT qname, cname FROM mbus.queue_pause") == []


def _drawn(page: Page, box: str, field: str) -> list[list[float]]:
    """The points a chart drew ([at, value], ...), read back from the page."""
    found: list[list[float]] = json.loads(
        page.get_attribute(f"#{box}-charts figure[data-field={field}]", "data-values") or "[]"
    )
    return found


def test_a_queues_charts_draw_what_the_database_held(ops_dsn: str, page: Page) -> None:
    state.build(ops_dsn)
    base, stop = start(ops_dsn, sample_every_s=0.25)
    svc = Service(ops_dsn, base)
    svc.add_key("admin", ADMIN_SCOPES)
    try:
        login(page, svc.base, svc.keys["admin"], "queues")
        row = "#queues-table tr[data-queue='orders'][data-consumer='audit']"
        before = svc.value("SELECT depth FROM mbus.queue_stats('orders') WHERE cname = 'audit'")
        page.click(f"{row} td >> nth=0")
        # a flat line has no height: wait for it in the page, not for it to be "visible"
        page.wait_for_selector(
            "#queues-charts:not([hidden]) figure[data-field=depth] polyline[points]",
            state="attached",
        )
        caption = page.inner_text("#queues-charts .chart-title")
        assert "orders / audit" in caption and "from the service's samples" in caption
        svc.sql("SELECT mbus.post('orders', '{}') FROM generate_series(1, 3)")
        page.wait_for_function(
            "() => { const v = JSON.parse(document.querySelector("
            "'#queues-charts figure[data-field=depth]').dataset.values || '[]');"
            f" return v.length > 2 && v[v.length - 1][1] === {before + 3}; }}",
            timeout=20_000,
        )
        depth = _drawn(page, "queues", "depth")
        now = svc.value("SELECT depth FROM mbus.queue_stats('orders') WHERE cname = 'audit'")
        assert depth[-1][1] == now == before + 3
        # the queue held only these two depths while it was sampled
        assert {v for _, v in depth} == {before, before + 3}
        assert [t for t, _ in depth] == sorted(t for t, _ in depth)
        # the posted rate, integrated over the samples' times, is what was posted
        at = {t: i for i, (t, _) in enumerate(depth)}
        posted = _drawn(page, "queues", "posted_per_s")
        total = sum(rate * (t - depth[at[t] - 1][0]) for t, rate in posted if at[t] > 0)
        assert total == pytest.approx(3, abs=0.05)
        polyline = page.get_attribute("#queues-charts figure[data-field=depth] polyline", "points")
        assert polyline is not None and len(polyline.split()) == len(depth)
        if shots := os.environ.get("PGMBUS_SCREENSHOTS"):  # `make screenshots`
            page.screenshot(path=str(Path(shots) / "dashboard-charts.png"), full_page=True)
    finally:
        stop()


def test_durations_read_as_a_person_reads_them(
    known: tuple[Service, dict[str, Any]], page: Page
) -> None:
    svc, _ = known
    login(page, svc.base, svc.keys["admin"], "streams")
    shown = page.evaluate(
        "[fmtDuration(259598.1), fmtDuration(3725), fmtDuration(125), fmtDuration(42.5)]"
    )
    assert shown == ["3 d 0 h", "1 h 2 min", "2 min 5 s", "42.5 s"]
    lag = cell(page, "#groups-table tr[data-group='billing'] .lag")
    assert re.fullmatch(r"\d+\.\d s|\d+ min \d+ s|\d+ h \d+ min|\d+ d \d+ h", lag), lag


def test_a_bad_key_after_a_good_one_leaves_nothing_of_its_data(
    known: tuple[Service, dict[str, Any]], page: Page
) -> None:
    svc, _ = known
    login(page, svc.base, svc.keys["admin"], "queues")
    page.click("#queues-table tr[data-queue='orders'][data-consumer='audit'] td >> nth=0")
    page.wait_for_selector("#queues-charts:not([hidden])")
    assert page.locator("#queues-table tr[data-queue]").count() > 0
    page.fill("#key", "pmk_wrong")
    page.click("#login button[type=submit]")
    page.wait_for_selector("#status.error")
    assert page.locator("tr[data-queue], tr[data-group], tr[data-client]").count() == 0
    assert page.is_hidden("#queues-charts")
    assert page.inner_text("#whoami") == ""
    assert page.evaluate("sessionStorage.getItem('pgmbus-key')") is None
    for tab in ("dmq", "streams", "timers", "sagas"):
        page.click(f"#tabs a[data-page={tab}]")
        assert page.locator("tbody tr:not(:has(td.muted))").count() == 0
        assert "orders" not in page.inner_text("main")
