"""Playwright driving Debian's chromium (headless) for the dashboard tests."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = os.environ.get("PGMBUS_CHROMIUM", "/usr/bin/chromium")


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless chromium (skips the test when the binary is missing)."""
    if not shutil.which(CHROMIUM):
        pytest.skip(f"{CHROMIUM} not installed (scripts/bootstrap.sh installs Debian's chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def login(page: Page, base: str, key: str, tab: str = "queues") -> None:
    """Open the dashboard on ``tab`` and sign in with ``key``; waits for the first load."""
    page.goto(f"{base}/#{tab}")
    page.fill("#key", key)
    page.click("#login button[type=submit]")
    page.wait_for_selector(f"body[data-loaded={tab}]")


def goto(page: Page, tab: str) -> None:
    """Switch to ``tab`` and wait until its data is loaded."""
    page.click(f"#tabs a[data-page={tab}]")
    page.wait_for_selector(f"body[data-loaded={tab}]")


def cell(page: Page, selector: str) -> str:
    """The text of one table cell."""
    return page.inner_text(selector).strip()
