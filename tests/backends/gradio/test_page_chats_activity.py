"""The chat page in a real browser: the chats list says, in words, which chat works now
("• working") and which waits for the person's approval ("• needs approval"), in every
open tab of the user, and the sign goes when the chat is idle again. Before, the list
showed no sign of either (see kit.py for the scripted model: "hold KEY" keeps writing until
the test lets it go, "python: CODE" calls a tool that asks first)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import let_go, open_tab, ready, send, wait_idle

pytestmark = pytest.mark.browser


def _entry(tab: Page, title: str) -> Locator:
    return tab.locator("#session-list label").filter(has_text=title)


def test_the_chats_list_says_which_chat_works_and_which_waits_for_approval(
    tab: Page, server: LiveServer, chromium: Browser
) -> None:
    other = open_tab(chromium, server, viewport={"width": 1280, "height": 900})
    try:
        send(tab, "hold sidebar-activity")
        for page in (tab, other):
            expect(_entry(page, "hold sidebar-activity")).to_contain_text("• working")
        other.reload()  # a page loaded while the chat works says so from the start
        ready(other)
        expect(_entry(other, "hold sidebar-activity")).to_contain_text("• working")
        let_go(server, "sidebar-activity")
        wait_idle(tab)
        for page in (tab, other):
            entry = _entry(page, "hold sidebar-activity")
            expect(entry).to_be_visible()
            expect(entry).not_to_contain_text("•")

        send(tab, "python: print('asked')")
        expect(tab.locator("#approve-once-btn")).to_be_visible()
        for page in (tab, other):
            expect(_entry(page, "hold sidebar-activity")).to_contain_text("• needs approval")
        tab.locator("#approve-once-btn").click()
        wait_idle(tab)
        for page in (tab, other):
            expect(_entry(page, "hold sidebar-activity")).not_to_contain_text("•")
    finally:
        other.context.close()
