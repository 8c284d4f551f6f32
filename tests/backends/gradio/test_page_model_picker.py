"""The chat page in a real browser: a long model name is readable in the side panel, at a
desktop width and in a narrow window. The picker's box cut it off under its arrow
("anthropic:claude-sonnet-4-20250" with the arrow drawn over it), with no way to read the
rest; now the box ends it with "…", says it whole when pointed at, and the note under the
picker names it in full, wrapping."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, expect

from backends.gradio import create_app
from backends.gradio.media import MediaShelf
from connectors.scripted import ScriptedModel
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import MemoryStore
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import WAIT_MS, Served, mount_page, pick, ready, served

pytestmark = pytest.mark.browser

LONG = "anthropic:claude-sonnet-4-20250514"
LONGER = "openrouter:meta-llama/llama-3.3-70b-instruct-turbo-2025"


async def _build() -> tuple[FastAPI, Served]:
    return await built_with(*(ScriptedModel(name=name, default="ok") for name in (LONG, LONGER)))


async def built_with(*models: ScriptedModel) -> tuple[FastAPI, Served]:
    """The page of a server whose models are `models` (the first is the default)."""
    manager = SessionManager(
        models=StaticCatalog(*models),
        store=MemoryStore(),
        workspace_root=Path(tempfile.mkdtemp(prefix="gui-agent-page-")),
    )
    closing, media = asyncio.Event(), MediaShelf()
    blocks = create_app(manager, title="GuiAgent test", closing=closing, media=media)
    app, assets = mount_page(blocks, manager, media=media)
    return app, Served(manager, closing, assets=assets)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with served(_build) as running:
        yield running


def _open(chromium: Browser, server: LiveServer, width: int) -> Page:
    page = chromium.new_context(viewport={"width": width, "height": 900}).new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(server.url, wait_until="load")
    ready(page)
    page.locator(".ga-side").get_by_text("Settings", exact=True).click()
    expect(page.locator("#model-picker input")).to_be_visible()
    return page


def _name_readable(page: Page, name: str) -> None:
    """`name` reads whole under the picker (nothing of it clipped), the picker's box ends
    what it cuts off with "…" and draws its arrow beside the text, and says it whole when
    pointed at."""
    note = page.locator("#model-note code")
    expect(note).to_have_text(name)
    note.scroll_into_view_if_needed()
    assert note.evaluate(
        """(code) => {
          const box = code.getBoundingClientRect(), area = code.closest('#model-note')
            .getBoundingClientRect();
          return code.scrollWidth <= code.clientWidth + 1 && box.right <= area.right + 1
            && box.right <= window.innerWidth;
        }"""
    ), "the note shows the whole name, inside the panel"
    box = page.locator("#model-picker input")
    expect(box).to_have_value(name)
    assert box.evaluate(
        """(input) => {
          const style = getComputedStyle(input);
          const arrow = input.closest('.wrap-inner').querySelector('.icon-wrap')
            .getBoundingClientRect();
          const textEnd = input.getBoundingClientRect().right - parseFloat(style.paddingRight);
          return style.textOverflow === 'ellipsis' && textEnd <= arrow.left + 0.5;
        }"""
    ), "the box cuts the name off with an ellipsis, before its arrow"
    box.hover()
    expect(box).to_have_attribute("title", name)


@pytest.mark.parametrize("width", [1280, 800])
def test_a_long_model_name_reads_whole_in_the_side_panel(
    chromium: Browser, server: LiveServer, width: int
) -> None:
    page = _open(chromium, server, width)
    try:
        _name_readable(page, LONG)
        pick(page, "model-picker", LONGER)
        _name_readable(page, LONGER)
    finally:
        page.context.close()
