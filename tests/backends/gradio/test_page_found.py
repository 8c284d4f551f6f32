"""What a person met on the page and no longer does, in a real browser: an error, or why
AutoChat stopped, vanished from the chat with the next message; a send the server refused
lost what was typed; a screen reader heard neither the agent's state nor an approval.
No test here leaves a JavaScript error in the page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

from backends.gradio.handlers import LOCAL_OWNER
from connectors.function import FunctionInfo
from gui_agent.exceptions import ModelServerError
from gui_agent.manager import SessionManager
from schema import Message, Role
from tests.backends.conftest import LiveServer, WarmTabs, live_server
from tests.backends.gradio.kit import (
    WAIT_MS,
    badge,
    bot_messages,
    build_playing,
    chat,
    closing,
    play,
    ready,
    send,
    stop_running,
    toast,
    wait_idle,
)

pytestmark = pytest.mark.browser

FAILED = "Error: upstream exploded"  # (the error's code is not for the person)


async def failing(messages: list[Message], info: FunctionInfo) -> Any:
    """`kit.play`, and a server error (HTTP 500) for a message that starts with "fail"."""
    last = messages[-1]
    if last.role is Role.USER and last.content.startswith("fail"):
        raise ModelServerError("upstream exploded", status=500, provider="scripted")
    return await play(messages, info)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(lambda: build_playing(failing)) as running:
        yield running
        running.call(closing(running))


UNLOADING = "gui-agent test: the page unloads"


@pytest.fixture
def tab(tabs: WarmTabs, server: LiveServer) -> Iterator[Page]:
    """A fresh tab that must not log a JavaScript error while the test uses it. What
    Gradio's client logs as a page unloads (a reload), when it cuts its own streams, does
    not count: from the page's `beforeunload` until the next page has loaded."""
    page = tabs.open(server.url)
    errors: list[str] = []
    unloading = [False]

    def console(message: ConsoleMessage) -> None:
        if message.text == UNLOADING:
            unloading[0] = True
        elif message.type == "error" and not unloading[0]:
            errors.append(message.text)

    def loaded(_page: Page) -> None:
        unloading[0] = False

    # An init script runs before the page's own: this listener runs before Gradio's.
    page.add_init_script(f"addEventListener('beforeunload', () => console.debug({UNLOADING!r}))")
    page.on("console", console)
    page.on("load", loaded)
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    page.set_default_timeout(WAIT_MS)
    page.goto(server.url, wait_until="load")
    ready(page)
    yield page
    try:
        assert errors == []
    finally:
        tabs.reset()
        stop_running(server)  # (what a failed test left streaming stops here)


def test_errors_and_autochat_stops_stay_in_the_chat_after_the_next_message(tab: Page) -> None:
    tab.locator("#autochat-max-turns input").fill("1")
    tab.locator("#autochat-max-turns input").press("Tab")  # the box is left, as a person does
    tab.locator("#autochat-toggle input").check()
    send(tab, "autochat: once")
    stopped = "AutoChat stopped after 1 automatic turn: it reached its limit of automatic turns"
    expect(chat(tab)).to_contain_text(stopped)
    wait_idle(tab)
    tab.locator("#autochat-toggle input").uncheck()
    expect(tab.locator("#autochat-status")).to_contain_text("AutoChat is off")
    send(tab, "fail now")
    expect(chat(tab)).to_contain_text(FAILED)
    wait_idle(tab)

    send(tab, "and after that")
    expect(bot_messages(tab).last).to_contain_text("You said: and after that")
    wait_idle(tab)
    expect(chat(tab)).to_contain_text(FAILED)
    expect(chat(tab)).to_contain_text(stopped)
    tab.reload(wait_until="load")
    expect(bot_messages(tab).last).to_contain_text("You said: and after that")
    expect(chat(tab)).to_contain_text(FAILED)
    expect(chat(tab)).to_contain_text(stopped)


def test_a_send_the_server_refuses_gives_back_what_was_typed(tab: Page, server: LiveServer) -> None:
    box = tab.locator("#chat-input textarea")
    edit = tab.locator("#edit-mode input")
    # An edit in a new chat: nothing to edit, and no empty chat is made for it.
    edit.check()
    send(tab, "an edit of nothing")
    expect(toast(tab, "no message of yours to edit")).to_be_visible()
    expect(box).to_have_value("an edit of nothing")
    expect(edit).to_be_checked()
    expect(badge(tab)).to_have_text("Ready")
    assert server.call(untitled_chats(server)) == []

    # An edit while a reply streams: the turn must be stopped first.
    edit.uncheck()
    send(tab, "slow reply to edit")
    expect(bot_messages(tab).last).to_contain_text("word2")
    edit.check()
    send(tab, "my careful edit")
    expect(box).to_have_value("my careful edit")
    expect(edit).to_be_checked()
    expect(badge(tab)).to_have_text("Working…")
    tab.keyboard.press("Escape")
    wait_idle(tab)
    box.press("Enter")  # as it was given back: an edit
    expect(bot_messages(tab).last).to_contain_text("You said: my careful edit")
    wait_idle(tab)
    assert "slow reply to edit" not in chat(tab).inner_text()


async def untitled_chats(server: LiveServer) -> list[str]:
    """The chats nobody wrote anything in (a chat takes its title from its first message)."""
    manager: SessionManager = server.state.manager
    return [record.id for record in await manager.list(LOCAL_OWNER) if not record.title]


def test_a_screen_reader_hears_the_state_and_an_approval(tab: Page) -> None:
    send(tab, "slow, to hear it run")
    expect(tab.get_by_role("status").filter(has_text="Working…")).to_be_visible()
    tab.keyboard.press("Escape")
    expect(tab.get_by_role("status").filter(has_text="Your turn")).to_be_visible()

    send(tab, "python: print(6 * 7)")
    expect(tab.get_by_role("alert").filter(has_text="Approval needed")).to_be_visible()
    panel = tab.get_by_role("region", name="Approval needed")
    panel.get_by_role("button", name="Allow once").click()
    expect(bot_messages(tab).last).to_contain_text("Result: 42")
    expect(tab.get_by_role("alert").filter(has_text="Approval needed")).to_have_count(0)
