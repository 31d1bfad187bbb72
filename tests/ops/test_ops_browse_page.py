"""The dashboard's message browser and stream cursor view in a real browser (chromium)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from playwright.sync_api import Page

from pgmbus import streams
from pgmbus.queues import Bus
from pgmbus.testing.server import TestServer
from tests.ops.browser import chromium, goto, login
from tests.ops.conftest import ADMIN_SCOPES, Service, start

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def svc(pg_server: TestServer) -> Iterator[Service]:
    """Queue orders (consumers default and audit) with ready, delayed, leased and dead
    messages; a group 'billing' part way through topic orders.created."""
    name = pg_server.create_database()
    dsn = pg_server.dsn(name)
    with Bus(dsn) as bus:
        bus.create_queue("orders")
        bus.create_consumer("orders", "audit")
        bus.post_batch("orders", [{"order": i, "total": 10 * i} for i in range(6)])
        bus.post("orders", {"order": 99}, headers={"tenant": "acme"}, priority=3)
        leased = bus.lease("orders", limit=2, lease=600)
        bus.bury(leased[0], "card declined")
    with psycopg.connect(dsn, autocommit=True) as conn:
        streams.create_group(conn, "billing", start="now")
        streams.publish_batch(conn, "orders.created", [{"n": i} for i in range(8)])
        with conn.transaction():
            batch = streams.read_next(conn, "billing", limit=3)
            assert batch.cursor is not None
            streams.commit(conn, "billing", batch.cursor)
    base, stop = start(dsn)
    service = Service(dsn, base)
    service.add_key("admin", ADMIN_SCOPES)
    service.add_key("viewer", ["queues:read:*", "streams:read:*"])
    try:
        yield service
    finally:
        stop()
        pg_server.drop_database(name)


@pytest.fixture
def page() -> Iterator[Page]:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        yield context.new_page()
        context.close()


def _show(page: Page, **filters: str) -> None:
    """Apply the filters and wait for the table they give."""
    for name, value in filters.items():
        if name == "state":
            page.select_option("#msg-state", value)
        else:
            page.fill(f"#msg-{name}", value)
    with page.expect_response(lambda r: "/messages?" in r.url):
        page.click("#msg-filters button[type=submit]")
    page.wait_for_timeout(50)


def test_filter_open_and_replay_a_dead_message(svc: Service, page: Page) -> None:
    [(iid,)] = svc.sql("SELECT iid FROM mbus.dmq WHERE qname = 'orders'")
    login(page, svc.base, svc.keys["admin"], "messages")
    rows = page.locator("#messages-table tbody tr[data-iid]")
    total = svc.value("SELECT count(*) FROM mbus.q_orders") + 1
    assert rows.count() == total
    _show(page, state="dead")
    assert rows.count() == 1
    assert page.get_attribute("#messages-table tbody tr[data-iid]", "data-state") == "dead"
    assert "card declined" in page.inner_text("#messages-table tbody")
    page.click(f"#messages-table tr[data-iid='{iid}']")
    page.wait_for_selector("#msg-detail:not([hidden])")
    assert "card declined" in page.inner_text("#msg-dead")
    assert '"order": 99' in page.inner_text("#msg-detail-body")  # priority 3: leased first
    # the dialog first: cancelled, nothing happens
    page.click("#msg-replay")
    page.wait_for_selector("#confirm-dialog[open]")
    assert iid in page.inner_text("#confirm-text")
    page.click("#confirm-cancel")
    assert svc.value("SELECT count(*) FROM mbus.dmq WHERE iid = %s", (iid,)) == 1
    page.click("#msg-replay")
    page.click("#confirm-ok")
    page.wait_for_selector("#status:has-text('replayed')")
    assert svc.value("SELECT count(*) FROM mbus.dmq WHERE iid = %s", (iid,)) == 0
    assert svc.value("SELECT mbus.peek('orders', %s)", (iid,)) is True
    page.wait_for_selector(f"#messages-table tr[data-iid='{iid}']", state="detached")


def test_a_read_only_key_sees_messages_but_no_action(svc: Service, page: Page) -> None:
    login(page, svc.base, svc.keys["viewer"], "messages")
    _show(page, state="leased")
    page.click("#messages-table tbody tr[data-iid] >> nth=0")
    page.wait_for_selector("#msg-detail:not([hidden])")
    assert "leased" in page.inner_text("#msg-deliveries")
    for action in ("replay", "release", "bury", "delete"):
        assert page.is_hidden(f"#msg-{action}")


def test_search_by_iid_and_data_field_then_page_through(svc: Service, page: Page) -> None:
    with Bus(svc.dsn) as bus:
        iid = bus.post("orders", {"order": 7, "sku": "x-1"}, iid="order-7")
    login(page, svc.base, svc.keys["admin"], "messages")
    _show(page, iid=iid)
    assert page.locator("#messages-table tbody tr[data-iid]").count() == 2  # two consumers
    _show(page, iid="", field="sku=x-1")
    assert {
        page.get_attribute(f"#messages-table tbody tr[data-iid] >> nth={i}", "data-iid")
        for i in range(2)
    } == {iid}
    assert page.is_disabled("#msg-next")


def test_a_groups_events_around_its_cursor(svc: Service, page: Page) -> None:
    login(page, svc.base, svc.keys["viewer"], "streams")
    page.fill("#around-topic", "orders.created")
    page.fill("#around-n", "2")
    with page.expect_response(lambda r: "/around?" in r.url):
        page.click("#around-form button[type=submit]")
    page.wait_for_selector("#around-table tr.cursor-mark")
    before = page.locator("#around-table tr[data-side=before]")
    after = page.locator("#around-table tr[data-side=after]")
    ids = svc.sql("SELECT id FROM mbus.events WHERE topic = 'orders.created' ORDER BY id")
    assert [int(before.nth(i).get_attribute("data-event-id") or 0) for i in range(2)] == [
        ids[1][0],
        ids[2][0],
    ]
    assert [int(after.nth(i).get_attribute("data-event-id") or 0) for i in range(2)] == [
        ids[3][0],
        ids[4][0],
    ]


def test_a_bad_key_leaves_nothing_of_the_browser(svc: Service, page: Page) -> None:
    login(page, svc.base, svc.keys["admin"], "messages")
    page.click("#messages-table tbody tr[data-iid] >> nth=0")
    page.wait_for_selector("#msg-detail:not([hidden])")
    page.fill("#key", "pmk_wrong")
    page.click("#login button[type=submit]")
    page.wait_for_selector("#status.error")
    assert page.locator("#messages-table tbody tr[data-iid]").count() == 0
    assert page.is_hidden("#msg-detail")
    assert page.inner_text("#msg-detail-body") == ""
    assert page.locator("#msg-queue option").count() == 0
    assert "orders" not in page.inner_text("main")


@pytest.mark.slow
def test_screenshots_of_the_browser(svc: Service, page: Page, tmp_path: Path) -> None:
    """`make screenshots` writes these to docs/img (PGMBUS_SCREENSHOTS)."""
    shots = Path(os.environ.get("PGMBUS_SCREENSHOTS", str(tmp_path)))
    shots.mkdir(parents=True, exist_ok=True)
    login(page, svc.base, svc.keys["admin"], "messages")
    page.click("#messages-table tbody tr[data-state=leased] >> nth=0")
    page.wait_for_selector("#msg-detail:not([hidden])")
    page.screenshot(path=str(shots / "dashboard-messages.png"), full_page=True)
    goto(page, "streams")
    page.fill("#around-topic", "orders.created")
    with page.expect_response(lambda r: "/around?" in r.url):
        page.click("#around-form button[type=submit]")
    page.wait_for_selector("#around-table tr.cursor-mark")
    page.screenshot(path=str(shots / "dashboard-stream-cursor.png"), full_page=True)
    assert (shots / "dashboard-messages.png").stat().st_size > 10_000
