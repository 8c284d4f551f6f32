"""`WarmTabs`, the fresh tabs of the page tests: a tab opened after `reset()` starts as a
new browser's would (no cookie, no stored value, the earlier tabs closed), and a test that
closes the tabs' context itself only makes the next tab start a new one."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.backends.conftest import WarmTabs

pytestmark = pytest.mark.browser

PAGE = b"<!doctype html><title>page</title><p>a page"


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: Any) -> None:  # (quiet)
        pass


@contextmanager
def _served() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def site() -> Iterator[str]:
    with _served() as address:
        yield address


@pytest.fixture
def other_site() -> Iterator[str]:
    with _served() as address:
        yield address


STORE = """() => {
    localStorage.setItem("chat", "kept");
    document.cookie = "login=alice; path=/";
    return new Promise((done) => {
        const opening = indexedDB.open("drafts");
        opening.onsuccess = () => { opening.result.close(); done(true); };
    });
}"""

READ = """async () => ({
    stored: localStorage.getItem("chat"),
    cookie: document.cookie,
    databases: (await indexedDB.databases()).map((database) => database.name),
})"""


def test_a_tab_after_reset_has_nothing_an_earlier_tab_stored(chromium: Browser, site: str) -> None:
    tabs = WarmTabs(chromium, "/keeper")
    try:
        first = tabs.open(site)
        first.goto(site)
        first.evaluate(STORE)
        second_of_the_first = first.context.new_page()  # (a second tab the test opened)
        second_of_the_first.goto(site)
        assert second_of_the_first.evaluate(READ) == {
            "stored": "kept",
            "cookie": "login=alice",
            "databases": ["drafts"],
        }  # (shared while the test runs, as in one browser)
        tabs.reset()
        assert first.is_closed() and second_of_the_first.is_closed()
        fresh = tabs.open(site)
        fresh.goto(site)
        assert fresh.evaluate(READ) == {"stored": None, "cookie": "", "databases": []}
        assert fresh.context is first.context  # (the same warm context, cleared)
    finally:
        tabs.close()


def test_a_context_the_test_closed_is_replaced_by_a_new_one(chromium: Browser, site: str) -> None:
    tabs = WarmTabs(chromium, "/keeper")
    try:
        first = tabs.open(site)
        first.goto(site)
        first.evaluate(STORE)
        first.context.close()
        tabs.reset()  # (nothing left to reset)
        fresh = tabs.open(site)
        fresh.goto(site)
        assert fresh.context is not first.context
        assert fresh.evaluate(READ) == {"stored": None, "cookie": "", "databases": []}
    finally:
        tabs.close()


def test_an_origin_a_tab_went_on_to_is_cleared_too(
    chromium: Browser, site: str, other_site: str
) -> None:
    tabs = WarmTabs(chromium, "/keeper")
    try:
        first = tabs.open(site)
        first.goto(other_site)  # (another port: another origin)
        first.evaluate(STORE)
        tabs.reset()
        fresh = tabs.open(other_site)
        fresh.goto(other_site)
        assert fresh.evaluate(READ) == {"stored": None, "cookie": "", "databases": []}
    finally:
        tabs.close()
