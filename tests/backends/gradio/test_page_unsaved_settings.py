"""In a real browser: a setting typed into a box that saves when left (the system prompt, the
Advanced settings) is not lost by a reload made from inside that box. The reloaded page
saves it to the chat, shows it, and lets go of what it kept; a wrong value comes back as
typed with its problem named; on a new chat, the boxes show it again and the chat that the
first message makes takes it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from backends.gradio.form import SETTINGS_NOT_SAVED
from connectors.scripted import ScriptedModel
from gui_agent.interpreter import Interpreter
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    eventually,
    open_tab,
    send,
    served,
    session_starting,
    user_messages,
    wait_idle,
)
from tests.backends.gradio.test_page_settings_hunt8 import (
    build,
    field,
    key_in,
    open_advanced,
    settings_of,
)

pytestmark = pytest.mark.browser

KEPT = "() => sessionStorage.getItem('gui-agent-unsaved:' + location.pathname)"
"""What the page keeps of the boxes not yet saved (null: nothing)."""


@pytest.fixture
def server() -> Iterator[LiveServer]:
    with served(build) as running:
        yield running


def _a_chat(chromium: Browser, server: LiveServer, text: str) -> tuple[Page, Interpreter]:
    """A tab on a chat that `text` started, with Settings › Advanced open."""
    tab = open_tab(chromium, server, viewport={"width": 1280, "height": 900})
    send(tab, text)
    wait_idle(tab)
    chat = session_starting(server, text)
    open_advanced(tab)
    return tab, chat


def _reload(tab: Page) -> None:
    """Reload with the keyboard's focus still in the box just typed into (no blur-save)."""
    tab.reload(wait_until="load")
    open_advanced(tab)


def test_a_setting_typed_just_before_a_reload_is_saved_and_shown_after_it(
    chromium: Browser, server: LiveServer
) -> None:
    tab, chat = _a_chat(chromium, server, "first message")
    prompt = tab.locator("#system-prompt textarea")
    prompt.click()
    prompt.press("Control+a")
    prompt.press_sequentially("Answer like a pirate.")
    key_in(tab, "max-tokens", "321")  # (leaving the prompt saved it: not this box)
    assert settings_of(server, chat).max_tokens is None  # not saved yet: still in the box
    assert "321" in str(tab.evaluate(KEPT))

    _reload(tab)
    expect(user_messages(tab)).to_have_count(1)
    expect(field(tab, "max-tokens")).to_have_value("321")
    expect(prompt).to_have_value("Answer like a pirate.")
    expect(tab.locator("#settings-note")).to_have_text("")
    saved = settings_of(server, chat)
    assert saved.max_tokens == 321 and saved.system_prompt == "Answer like a pirate."
    eventually(tab, lambda: tab.evaluate(KEPT) is None, "the page lets go of what it kept")

    send(tab, "after the reload")  # the reply is asked for with it
    expect(user_messages(tab)).to_have_count(2)
    wait_idle(tab)
    model: ScriptedModel = server.state.model
    asked = model.requests[-1].settings
    assert asked is not None and asked.max_tokens == 321

    # the system prompt, typed just before a reload from inside its box
    prompt.click()
    prompt.press("Control+a")
    prompt.press_sequentially("Be brief.")
    tab.reload(wait_until="load")
    expect(user_messages(tab)).to_have_count(2)
    eventually(tab, lambda: settings_of(server, chat).system_prompt == "Be brief.", "saved")
    open_advanced(tab)
    expect(prompt).to_have_value("Be brief.")
    tab.context.close()


def test_a_wrong_value_typed_before_a_reload_comes_back_as_typed_and_named(
    chromium: Browser, server: LiveServer
) -> None:
    tab, chat = _a_chat(chromium, server, "a chat")
    key_in(tab, "max-iterations", "0")
    problem = SETTINGS_NOT_SAVED.format(problem="Max steps per turn must be at least 1")
    expect(tab.locator("#settings-note")).to_have_text(problem)

    _reload(tab)
    expect(field(tab, "max-iterations")).to_have_value("0")
    expect(tab.locator("#settings-note")).to_have_text(problem)
    assert settings_of(server, chat).max_iterations == 10  # the chat keeps its value
    assert '"0"' in str(tab.evaluate(KEPT))  # still not saved: still kept

    key_in(tab, "max-iterations", "3")  # put right and left: saved, and let go
    tab.locator("#max-iterations input").press("Tab")
    eventually(tab, lambda: settings_of(server, chat).max_iterations == 3, "saved")
    expect(tab.locator("#settings-note")).to_have_text("")
    eventually(tab, lambda: tab.evaluate(KEPT) is None, "the page lets go of what it kept")
    tab.context.close()


def test_settings_typed_in_a_new_chat_come_back_after_a_reload_and_go_into_its_chat(
    chromium: Browser, server: LiveServer
) -> None:
    tab = open_tab(chromium, server, viewport={"width": 1280, "height": 900})
    open_advanced(tab)
    key_in(tab, "max-tokens", "77")
    _reload(tab)
    expect(field(tab, "max-tokens")).to_have_value("77")
    assert '"77"' in str(tab.evaluate(KEPT))  # nothing saved yet: there is no chat

    send(tab, "now a chat")
    wait_idle(tab)
    chat = session_starting(server, "now a chat")
    assert settings_of(server, chat).max_tokens == 77  # the new chat took the boxes
    eventually(tab, lambda: tab.evaluate(KEPT) is None, "the page lets go of what it kept")

    # typed in a new chat and left for another chat: not brought back to a new chat later
    tab.locator("#new-session-btn").click()
    expect(user_messages(tab)).to_have_count(0)
    key_in(tab, "max-tokens", "55")
    tab.locator("#session-list").get_by_text("now a chat").click()
    expect(user_messages(tab)).to_have_count(1)
    tab.locator("#new-session-btn").click()
    expect(user_messages(tab)).to_have_count(0)
    _reload(tab)
    expect(field(tab, "max-tokens")).to_have_value("")
    tab.context.close()
