"""The page's footer, as `gui-agent serve` mounts it, does not point people at Gradio's API
page: every page event is private, so it would list nothing; the app's API is /api."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from backends.server import build_server
from gui_agent.config import AppConfig
from tests.backends.api.live import ServerThread

pytestmark = pytest.mark.browser


@pytest.fixture
def page(chromium: Browser, tmp_path: Path) -> Iterator[Page]:
    config = AppConfig(models=("scripted:echo",), data_dir=tmp_path / "data")
    server = ServerThread(lambda: build_server(config, probe_local=False)).start()
    context = chromium.new_context()
    try:
        tab = context.new_page()
        tab.goto(server.base_url + "/", wait_until="load")
        yield tab
    finally:
        context.close()
        server.stop()


def test_the_footer_has_no_use_via_api_link(page: Page) -> None:
    footer = page.locator("footer")
    expect(footer.get_by_text("Built with Gradio")).to_be_visible()  # the footer is drawn
    expect(footer.get_by_text("Settings")).to_be_visible()
    expect(footer.get_by_text("Use via API")).to_have_count(0)
