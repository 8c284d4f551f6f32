"""Fixtures of the chat page's browser tests: one app server per test module, and a fresh
tab per test (`WarmTabs`: its cookies and storage its own, as a new browser's); after each
test, every run still going on the server is stopped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from tests.backends.conftest import LiveServer, WarmTabs
from tests.backends.gradio.kit import KEEPER_PATH, WAIT_MS, build, ready, served, stop_running


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with served(build) as running:  # (at the end, the open tabs' keep-alive events end)
        yield running


@pytest.fixture(scope="module")
def tabs(chromium: Browser) -> Iterator[WarmTabs]:
    """The module's fresh tabs (a small page of the server's keeps their renderer warm)."""
    warm = WarmTabs(chromium, KEEPER_PATH, viewport={"width": 1280, "height": 900})
    yield warm
    warm.close()


@pytest.fixture
def tab(tabs: WarmTabs, server: LiveServer) -> Iterator[Page]:
    page = tabs.open(server.url)
    try:
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url, wait_until="load")
        ready(page)
        yield page
    finally:
        tabs.reset()  # (the tab closes; what it stored is cleared)
        stop_running(server)  # (what a failed test left streaming stops here)
