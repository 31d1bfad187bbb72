"""The dashboard's charts drawn from a real Prometheus, in a real browser: the caption says
where the figures come from, and says it again when Prometheus goes away."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from pgmbus.queues import Bus
from tests.ops.browser import chromium, login
from tests.ops.conftest import Service, free_port, start, wait_until
from tests.ops.prometheus import prometheus

pytestmark = pytest.mark.browser


@pytest.fixture
def page() -> Iterator[Page]:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        yield context.new_page()
        context.close()


def test_the_chart_caption_names_prometheus_then_the_samples(
    ops_dsn: str, page: Page, tmp_path: Path
) -> None:
    prom_port = free_port()
    base, stop = start(ops_dsn, sample_every_s=0.25, prometheus_url=f"http://127.0.0.1:{prom_port}")
    svc = Service(ops_dsn, base)
    svc.add_key("viewer", ["queues:read:*"])
    with Bus(ops_dsn) as bus:
        bus.create_queue("mail")
        bus.post_batch("mail", [{"n": i} for i in range(5)])
    try:
        with prometheus(tmp_path, [base.removeprefix("http://")], prom_port) as prom:
            wait_until(lambda: len(prom.query('pgmbus_queue_depth{queue="mail"} == 5')) == 1, 20)
            login(page, base, svc.keys["viewer"], "queues")
            page.click("#queues-table tr[data-queue='mail'][data-consumer='default'] td >> nth=0")
            page.wait_for_function(
                "() => { const v = JSON.parse(document.querySelector("
                "'#queues-charts figure[data-field=depth]')?.dataset.values || '[]');"
                " return v.length > 0 && v[v.length - 1][1] === 5; }",
                timeout=20_000,
            )
            caption = page.inner_text("#queues-charts .chart-title")
            assert caption == "mail / default · from Prometheus"
            prom.stop()
            # the page redraws the chart with its next refresh
            page.wait_for_function(
                "() => document.querySelector('#queues-charts .chart-title').textContent"
                ".includes('samples')",
                timeout=20_000,
            )
            assert page.inner_text("#queues-charts .chart-title") == (
                "mail / default · from the service's samples; "
                "Prometheus did not answer (ConnectError)"
            )
    finally:
        stop()
