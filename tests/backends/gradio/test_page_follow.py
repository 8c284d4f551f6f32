"""Tabs follow what other tabs of the same user change, in a real browser: a chat's title,
its AutoChat switch and limits, and the chats list (a chat created, renamed or deleted)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    badge,
    bot_messages,
    open_manage,
    open_tab,
    send,
    settle,
    toast,
    user_messages,
    wait_idle,
)

pytestmark = pytest.mark.browser


def open_chat(page: Page, title: str) -> None:
    """Pick the chat from the list (found by searching), then clear the search."""
    page.locator("#session-search textarea").fill(title)
    page.locator("#session-list").get_by_text(title).first.click()
    expect(bot_messages(page).last).to_contain_text(f"You said: {title}")
    page.locator("#session-search textarea").fill("")


@contextmanager
def second_tab_on(tab: Page, chromium: Browser, server: LiveServer, title: str) -> Iterator[Page]:
    """A chat made in `tab` by sending `title`, open in a second tab of the same user too
    (closed after)."""
    send(tab, title)
    wait_idle(tab)
    other = open_tab(chromium, server)
    try:
        open_chat(other, title)
        yield other
    finally:
        other.context.close()


def manage(page: Page) -> None:
    open_manage(page)


def test_a_second_tab_follows_the_title_autochat_and_its_limits(
    tab: Page, chromium: Browser, server: LiveServer
) -> None:
    with second_tab_on(tab, chromium, server, "followed by a second tab") as other:
        manage(tab)
        manage(other)
        expect(other.locator("#rename-input textarea")).to_have_value("followed by a second tab")

        tab.locator("#autochat-max-turns input").fill("1")
        expect(other.locator("#autochat-max-turns input")).to_have_value("1")
        tab.locator("#autochat-delay input").fill("3")
        expect(other.locator("#autochat-delay input")).to_have_value("3")

        settle(tab)  # (the box's value came from the server just now)
        tab.locator("#rename-input textarea").fill("Renamed in the first tab")
        tab.get_by_role("button", name="Rename chat").click()
        expect(other.locator("#rename-input textarea")).to_have_value("Renamed in the first tab")
        expect(other.locator("#session-list")).to_contain_text("Renamed in the first tab")

        tab.locator("#autochat-toggle input").check()  # starts at once: idle after a turn
        expect(other.locator("#autochat-toggle input")).to_be_checked()
        expect(other.locator("#autochat-status")).to_contain_text("AutoChat")
        for name, page in (("first", tab), ("second", other)):
            expect(page.locator("#autochat-status"), f"the {name} tab").to_contain_text(
                "AutoChat stopped after 1 automatic turn"
            )
            wait_idle(page)
        tab.locator("#autochat-toggle input").uncheck()
        expect(other.locator("#autochat-toggle input")).not_to_be_checked()
        expect(other.locator("#autochat-status")).to_have_text("AutoChat is off.")
        # the first tab's own changes came back to it as events, and changed nothing there
        expect(tab.locator("#autochat-max-turns input")).to_have_value("1")
        expect(tab.locator("#autochat-toggle input")).not_to_be_checked()


def test_every_tab_lists_the_chats_made_renamed_or_deleted_in_another(
    tab: Page, chromium: Browser, server: LiveServer
) -> None:
    send(tab, "a chat listed in every tab")
    wait_idle(tab)
    other = open_tab(chromium, server)  # a new chat, beside the list of the user's chats
    try:
        sessions = other.locator("#session-list")
        expect(sessions).to_contain_text("a chat listed in every tab")  # the list is loaded
        tab.locator("#new-session-btn").click()
        expect(user_messages(tab)).to_have_count(0)
        expect(badge(tab)).to_have_text("Ready")
        send(tab, "a chat made in the first tab")
        wait_idle(tab)
        expect(sessions).to_contain_text("a chat made in the first tab")
        manage(tab)
        settle(tab)  # (the box's value came from the server just now)
        tab.locator("#rename-input textarea").fill("Renamed where the other tab cannot see")
        tab.get_by_role("button", name="Rename chat").click()
        expect(sessions).to_contain_text("Renamed where the other tab cannot see")
        tab.get_by_role("button", name="Delete chat").click()
        tab.get_by_role("button", name="Yes, delete it").click()
        expect(tab.locator("#session-list")).not_to_contain_text("Renamed where the other")
        expect(sessions).not_to_contain_text("Renamed where the other")
        expect(sessions).to_contain_text("a chat listed in every tab")
    finally:
        other.context.close()


def test_a_chat_deleted_in_one_tab_leaves_the_other_for_a_new_chat(
    tab: Page, chromium: Browser, server: LiveServer
) -> None:
    """The other tab's list dropped the chat, but its view went on showing the deleted
    chat's messages, with nothing chosen in the list."""
    with second_tab_on(tab, chromium, server, "a chat deleted in the other tab") as other:
        other.locator("#chat-input textarea").fill("a draft for whatever comes next")
        manage(tab)
        tab.get_by_role("button", name="Delete chat").click()
        tab.get_by_role("button", name="Yes, delete it").click()
        expect(toast(other, "This chat was deleted in another tab or window")).to_have_count(1)
        expect(user_messages(other)).to_have_count(0)
        expect(badge(other)).to_have_text("Ready")
        expect(other.locator("#session-list")).not_to_contain_text("deleted in the other tab")
        box = other.locator("#chat-input textarea")
        expect(box).to_have_value("a draft for whatever comes next")  # (it stays)
        box.press("Enter")
        expect(bot_messages(other).last).to_contain_text("You said: a draft for whatever")
        expect(user_messages(other)).to_have_count(1)  # a new chat, not the deleted one


def test_a_tool_mode_set_in_one_tab_empties_the_tool_picked_in_another(
    tab: Page, chromium: Browser, server: LiveServer
) -> None:
    """The other tab's list says the new mode; its picker and mode, which showed the mode
    before, are emptied rather than left saying what is no longer so."""
    with second_tab_on(tab, chromium, server, "modes across tabs") as other:
        mode_there = other.locator("#tool-mode")
        other.locator("#tool-picker input").click()
        other.get_by_role("option", name="run_python").click()
        expect(mode_there.get_by_label("As the app decides")).to_be_checked()
        tab.locator("#tool-picker input").click()
        tab.get_by_role("option", name="run_python").click()
        expect(tab.locator("#tool-mode").get_by_label("As the app decides")).to_be_checked()
        tab.locator("#tool-mode").get_by_text("Never run").click()
        expect(other.locator("#tools-panel")).to_contain_text("run_python: never runs")
        expect(mode_there.locator("input:checked")).to_have_count(0)
        expect(other.locator("#tool-picker input")).to_have_value("")
        expect(tab.locator("#tool-mode").get_by_label("Never run")).to_be_checked()  # (its own)


def test_a_second_tab_shows_the_tools_allowed_and_forgotten_in_the_first(
    tab: Page, chromium: Browser, server: LiveServer
) -> None:
    with second_tab_on(tab, chromium, server, "tools across tabs") as other:
        allowed_there = other.locator("#allowed-tools")
        expect(allowed_there).to_contain_text("None")
        send(tab, "python: print(5)")
        expect(badge(tab)).to_have_text("Waiting for your approval")
        tab.locator("#approve-session-btn").click()
        wait_idle(tab)
        expect(allowed_there).to_contain_text("run_python: runs without asking")
        tab.locator("#forget-allowed-btn").click()  # the chat is idle: no turn carries it
        expect(tab.locator("#allowed-tools")).to_contain_text("None")
        expect(allowed_there).to_contain_text("None")
