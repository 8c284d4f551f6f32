"""The React front end while AutoChat waits between two of its turns, in a real Chromium
against a real API server: the badge says a turn is coming (as the Gradio page does), not
"Your turn"; Stop is there to end AutoChat; a reload says the same; after Stop the badge
says it is the person's turn."""

from __future__ import annotations

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.backends.api.live import Backend
from tests.backends.react.test_react_page import backend, new_chat, page, send, signed_in

pytestmark = pytest.mark.browser

__all__ = ["backend", "page"]  # (the fixtures, shared with the page's tests)


def badge(page: Page) -> Locator:
    return page.get_by_role("status", name="State")


def test_the_badge_says_autochat_waits_between_its_turns_and_stop_ends_it(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    new_chat(page)
    page.get_by_text("AutoChat", exact=True).click()
    page.get_by_label("Delay between turns (s)").fill("30")
    page.get_by_role("button", name="Save limits").click()
    page.get_by_label("AutoChat: keep working on its own").check()
    send(page, "keep going between turns")
    expect(page.get_by_text("AutoChat: automatic turn 1 of", exact=False)).to_be_visible()
    expect(badge(page)).to_have_text("AutoChat: next turn soon")  # (not "Your turn")
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_enabled()  # AutoChat is there to be stopped
    # A tab that opens the chat during the wait says the same
    page.reload()
    chats = page.get_by_role("navigation", name="Your chats")
    chats.get_by_role("button", name="keep going between turns").click()
    expect(badge(page)).to_have_text("AutoChat: next turn soon")
    expect(stop).to_be_enabled()
    page.get_by_text("AutoChat", exact=True).click()  # (the section, opened again)
    stop.click()
    expect(
        page.get_by_text("AutoChat stopped after 0 automatic turns", exact=False)
    ).to_be_visible()
    expect(badge(page)).to_have_text("Your turn")  # AutoChat ended: nothing more is coming
    expect(stop).to_be_disabled()
