"""Fixtures of the chat page's browser tests: one app server per test module, and a fresh
tab (a browser context of its own) per test; after each test, every run still going on the
server is stopped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import WAIT_MS, build, ready, served, stop_running


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with served(build) as running:  # (at the end, the open tabs' keep-alive events end)
        yield running


@pytest.fixture
def tab(chromium: Browser, server: LiveServer) -> Iterator[Page]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(server.url, wait_until="load")
    ready(page)
    try:
        yield page
    finally:
        context.close()
        stop_running(server)  # (what a failed test left streaming stops here)
