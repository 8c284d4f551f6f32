"""In a real browser: the Advanced settings (Max tokens, Max steps per turn, memory,
approval timeout) show the chat's values, reach the model's requests when changed, survive a
reload, follow a change made elsewhere, and refuse a value out of range by naming the field
and saving nothing."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI
from playwright.sync_api import Browser, Locator, Page, expect

from backends.gradio import create_app
from connectors.scripted import ScriptedModel, call
from gui_agent.interpreter import Interpreter
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import MemoryStore
from schema import SessionSettings
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    WAIT_MS,
    bot_messages,
    eventually,
    mount_page,
    open_tab,
    send,
    served,
    session_starting,
    toast,
    user_messages,
    wait_idle,
)

pytestmark = pytest.mark.browser

NOT_SAVED = "Not saved: the chat keeps that setting as it was until you fix it."


@dataclass(frozen=True)
class Served:
    manager: SessionManager
    closing: asyncio.Event
    model: ScriptedModel


async def build() -> tuple[FastAPI, Served]:
    """The app; its model answers "noted", except that the second reply calls a tool."""
    model = ScriptedModel(["noted", call("list_files")], name="scripted", default="noted")
    manager = SessionManager(
        models=StaticCatalog(model),
        store=MemoryStore(),
        workspace_root=Path(tempfile.mkdtemp(prefix="gui-agent-settings-")),
    )
    closing = asyncio.Event()
    blocks = create_app(manager, notice=None, title="GuiAgent test", closing=closing)
    app, _assets = mount_page(blocks, manager)
    return app, Served(manager, closing, model)


@pytest.fixture
def server() -> Iterator[LiveServer]:
    """A server per test: each test counts the model's requests and its scripted replies."""
    with served(build) as running:
        yield running


SETTLED = """() => new Promise((done) =>
  requestAnimationFrame(() => requestAnimationFrame(() => done(true))))"""
"""Resolves two animation frames later: the page's pending work (effects) has run."""


def open_settings(tab: Page) -> None:
    """Open the side panel's Settings and wait until its boxes can be typed into: they are
    made when the accordion opens, and the framework gives each its first value a moment
    later (an effect), over anything typed before it. A box filled in that moment (about
    10 ms; a person takes longer) lost its text in 3 to 4 runs of 16 here."""
    tab.locator(".ga-side").get_by_text("Settings", exact=True).click()
    expect(tab.locator("#temperature input[type=number]")).to_be_visible()
    tab.wait_for_function(SETTLED)


def open_advanced(tab: Page) -> None:
    """Open Settings, then Advanced, and wait until its boxes can be typed into (as
    `open_settings` does)."""
    open_settings(tab)
    tab.locator("#advanced-settings").get_by_text("Advanced", exact=True).click()
    expect(tab.locator("#max-tokens input")).to_be_visible()
    tab.wait_for_function(SETTLED)


def type_setting(tab: Page, elem_id: str, value: str) -> None:
    """Put `value` in the box at once (as a paste would), and leave the box."""
    field = tab.locator(f"#{elem_id} input")
    field.fill(value)
    field.press("Tab")


def key_in(tab: Page, elem_id: str, value: str) -> None:
    """Type `value` over the box's text key by key, staying in the box."""
    field = tab.locator(f"#{elem_id} input")
    field.press("Control+a")
    field.press("Backspace")
    field.press_sequentially(value)


def field(tab: Page, elem_id: str) -> Locator:
    return tab.locator(f"#{elem_id} input")


def settings_of(server: LiveServer, interpreter: Interpreter) -> SessionSettings:
    async def read() -> SessionSettings:
        return interpreter.session.settings

    return server.call(read())


def test_max_tokens_and_max_steps_reach_the_model_and_survive_a_reload(
    chromium: Browser, server: LiveServer
) -> None:
    tab = open_tab(chromium, server, viewport={"width": 1280, "height": 900})
    open_advanced(tab)
    expect(field(tab, "max-tokens")).to_have_value("")  # the model's default
    expect(field(tab, "max-iterations")).to_have_value("10")
    expect(field(tab, "approval-timeout")).to_have_value("300")
    send(tab, "first message")
    wait_idle(tab)
    interpreter = session_starting(server, "first message")
    model: ScriptedModel = server.state.model
    first = model.requests[-1].settings
    assert first is not None and first.max_tokens is None

    # a second tab of the same browser shows the same chat, and follows what is saved
    other = tab.context.new_page()
    other.goto(server.url, wait_until="load")
    expect(user_messages(other)).to_have_count(1)
    open_advanced(other)
    type_setting(tab, "max-tokens", "123")  # saved on leaving the box
    key_in(tab, "max-iterations", "1")
    tab.locator("#max-iterations input").press("Enter")  # or on Enter
    expect(field(other, "max-tokens")).to_have_value("123")
    expect(field(other, "max-iterations")).to_have_value("1")
    other.close()

    # the model is asked for a tool call; one step per turn stops the turn after it
    send(tab, "list the files")
    expect(bot_messages(tab).last).to_contain_text("I stopped after 1 step (the maximum")
    wait_idle(tab)
    asked = model.requests[-1].settings
    assert asked is not None and asked.max_tokens == 123
    assert len(model.requests) == 2  # one model call for that turn, not a second one

    tab.reload(wait_until="load")
    expect(user_messages(tab)).to_have_count(2)
    open_advanced(tab)
    expect(field(tab, "max-tokens")).to_have_value("123")
    expect(field(tab, "max-iterations")).to_have_value("1")
    send(tab, "after the reload")
    expect(bot_messages(tab).last).to_contain_text("noted")
    wait_idle(tab)
    after = model.requests[-1].settings
    assert after is not None and after.max_tokens == 123

    # emptied, Max tokens is the model's default again
    type_setting(tab, "max-tokens", "")
    expect(tab.locator("#settings-note")).to_have_text("")
    send(tab, "no limit now")
    expect(user_messages(tab)).to_have_count(4)
    wait_idle(tab)
    cleared = model.requests[-1].settings
    assert cleared is not None and cleared.max_tokens is None
    kept = settings_of(server, interpreter)
    assert kept.max_tokens is None and kept.max_iterations == 1
    tab.context.close()


# One value per box: every value each box refuses, and the words for it, are checked
# without a browser (test_settings_form_hunt8.py); here, that each box's note, save and
# refusal are wired on the page, and an emptied box (said when it is left).
@pytest.mark.parametrize(
    ("elem_id", "typed", "problem"),
    [
        ("max-tokens", "12.5", "Max tokens must be a whole number"),
        ("max-iterations", "", "Max steps per turn is empty: type a number"),
        ("memory-exchanges", "0", "Exchanges remembered must be at least 1"),
        ("memory-token-budget", "-1", "Memory token budget must be at least 1"),
        ("approval-timeout", "0", "Approval timeout must be more than 0"),
    ],
)
def test_a_setting_out_of_range_is_named_and_only_that_box_is_not_saved(
    chromium: Browser, server: LiveServer, elem_id: str, typed: str, problem: str
) -> None:
    tab = open_tab(chromium, server, viewport={"width": 1280, "height": 900})
    send(tab, "a chat to set up")
    wait_idle(tab)
    interpreter = session_starting(server, "a chat to set up")
    # The chat's starting value is set on the server (the page's own saves are tested above
    # and below), and the page, reloaded, shows it.
    start = settings_of(server, interpreter).model_copy(update={"max_tokens": 4096})
    server.call(interpreter.update(settings=start))
    tab.reload(wait_until="load")
    expect(user_messages(tab)).to_have_count(1)
    open_advanced(tab)
    expect(field(tab, "max-tokens")).to_have_value("4096")
    saved = settings_of(server, interpreter)
    assert saved.max_tokens == 4096

    # said as it is typed (a box emptied says so when it is left: Gradio sends no input
    # event for a deletion)
    key_in(tab, elem_id, typed)
    if not typed:
        tab.locator(f"#{elem_id} input").press("Tab")
    expect(tab.locator("#settings-note")).to_have_text(f"{problem}. {NOT_SAVED}")
    assert settings_of(server, interpreter) == saved
    tab.locator(f"#{elem_id} input").press("Tab")  # and refused when the box is left
    # a valid change in another box is saved meanwhile (each box is its own setting), and
    # the note still names the box that is wrong
    other, name = (
        ("max-iterations", "max_iterations")
        if elem_id == "memory-exchanges"
        else ("memory-exchanges", "memory_exchanges")
    )
    type_setting(tab, other, "6")
    expected = saved.model_copy(update={name: 6})
    for _ in range(WAIT_MS // 50):
        if settings_of(server, interpreter) == expected:
            break
        tab.wait_for_timeout(50)
    assert settings_of(server, interpreter) == expected
    send(tab, "still works")  # and a send is not blocked by it
    expect(user_messages(tab)).to_have_count(2)
    wait_idle(tab)
    expect(tab.locator("#settings-note")).to_have_text(f"{problem}. {NOT_SAVED}")
    assert settings_of(server, interpreter) == expected
    model: ScriptedModel = server.state.model
    asked = model.requests[-1].settings
    assert asked is not None and asked.max_tokens == 4096
    tab.context.close()


def test_each_chat_shows_its_own_settings_and_follows_a_change_made_elsewhere(
    chromium: Browser, server: LiveServer
) -> None:
    tab = open_tab(chromium, server, viewport={"width": 1280, "height": 900})
    open_advanced(tab)
    type_setting(tab, "max-tokens", "123")  # before the first message: the new chat takes it
    send(tab, "chat one")
    wait_idle(tab)
    one = session_starting(server, "chat one")
    assert settings_of(server, one).max_tokens == 123

    tab.locator("#new-session-btn").click()
    expect(field(tab, "max-tokens")).to_have_value("")  # a new chat: the defaults again
    type_setting(tab, "memory-exchanges", "0")  # out of range: the message still goes
    expect(tab.locator("#settings-note")).to_contain_text("Exchanges remembered must be")
    send(tab, "chat two")
    sent = "Exchanges remembered must be at least 1. Your message was sent"
    expect(toast(tab, sent)).to_be_visible()
    wait_idle(tab)
    two = session_starting(server, "chat two")
    begun = settings_of(server, two)
    assert begun.memory_exchanges == 10 and begun.max_tokens is None  # the defaults
    type_setting(tab, "memory-exchanges", "4")
    expect(tab.locator("#settings-note")).to_have_text("")
    type_setting(tab, "approval-timeout", "2.5")
    expect(field(tab, "approval-timeout")).to_have_value("2.5")

    tab.locator("#session-list").get_by_text("chat one").click()
    expect(user_messages(tab).first).to_have_text("chat one")
    expect(field(tab, "max-tokens")).to_have_value("123")
    expect(field(tab, "memory-exchanges")).to_have_value("10")
    expect(field(tab, "approval-timeout")).to_have_value("300")

    # changed elsewhere (the HTTP API saves through Interpreter.update too): the tab follows
    changed = settings_of(server, one).model_copy(
        update={"max_tokens": 777, "memory_token_budget": 2000, "approval_timeout_s": None}
    )
    server.call(one.update(settings=changed))
    expect(field(tab, "max-tokens")).to_have_value("777")
    expect(field(tab, "memory-token-budget")).to_have_value("2000")
    expect(field(tab, "approval-timeout")).to_have_value("")  # waits for ever

    tab.locator("#session-list").get_by_text("chat two").click()
    expect(user_messages(tab).first).to_have_text("chat two")
    expect(field(tab, "memory-exchanges")).to_have_value("4")
    expect(field(tab, "approval-timeout")).to_have_value("2.5")
    kept = settings_of(server, two)
    assert kept.memory_exchanges == 4 and kept.approval_timeout_s == 2.5
    tab.context.close()


TEMPERATURE = "#temperature input[type=number]"


def type_temperature(tab: Page, value: str) -> None:
    """Put `value` in the temperature slider's number box, and leave the box."""
    box = tab.locator(TEMPERATURE)
    box.fill(value)
    box.press("Tab")


def test_a_temperature_out_of_range_is_named_and_not_saved(
    chromium: Browser, server: LiveServer
) -> None:
    """The slider's number box takes any number: one out of its range (0 to 2) is named
    under the settings and stays in the box (the browser put the nearest end of the range
    there, and a send saved that), and the chat and its next turns keep the temperature it
    had."""
    tab = open_tab(chromium, server, viewport={"width": 1280, "height": 900})
    send(tab, "a chat to warm up")
    wait_idle(tab)
    interpreter = session_starting(server, "a chat to warm up")
    start = settings_of(server, interpreter).model_copy(update={"temperature": 0.3})
    server.call(interpreter.update(settings=start))
    tab.reload(wait_until="load")
    expect(user_messages(tab)).to_have_count(1)
    open_settings(tab)
    expect(tab.locator(TEMPERATURE)).to_have_value("0.3")
    model: ScriptedModel = server.state.model

    type_temperature(tab, "5")
    problem = "Temperature must be from 0 to 2, not 5"
    expect(tab.locator("#settings-note")).to_have_text(f"{problem}. {NOT_SAVED}")
    expect(tab.locator(TEMPERATURE)).to_have_value("5")
    assert settings_of(server, interpreter) == start
    send(tab, "still warm")
    sent = f"{problem}. Your message was sent; the chat keeps that setting as it was"
    expect(toast(tab, sent)).to_be_visible()
    expect(user_messages(tab)).to_have_count(2)
    wait_idle(tab)
    asked = model.requests[-1].settings
    assert asked is not None and asked.temperature == 0.3
    assert settings_of(server, interpreter) == start

    # typed, then Send clicked at once (leaving the box on the way)
    tab.locator("#chat-input textarea").fill("sent at once")
    tab.locator(TEMPERATURE).fill("-1")
    tab.locator("#send-btn").click()
    expect(user_messages(tab)).to_have_count(3)
    wait_idle(tab)
    expect(tab.locator("#settings-note")).to_have_text(
        f"Temperature must be from 0 to 2, not -1. {NOT_SAVED}"
    )
    expect(tab.locator(TEMPERATURE)).to_have_value("-1")
    asked = model.requests[-1].settings
    assert asked is not None and asked.temperature == 0.3
    assert settings_of(server, interpreter) == start

    # emptied, the box is named too (the browser put the bottom of the range there)
    type_temperature(tab, "")
    expect(tab.locator("#settings-note")).to_have_text(
        f"Temperature is empty: type a number from 0 to 2. {NOT_SAVED}"
    )
    expect(tab.locator(TEMPERATURE)).to_have_value("")
    type_temperature(tab, "1.5")  # a value in range is saved, and the note goes
    expect(tab.locator("#settings-note")).to_have_text("")
    eventually(
        tab,
        lambda: settings_of(server, interpreter).temperature == 1.5,
        "the temperature typed in range to be saved",
    )
    tab.reload(wait_until="load")
    open_settings(tab)
    expect(tab.locator(TEMPERATURE)).to_have_value("1.5")
    tab.context.close()


def test_a_new_chat_made_after_a_temperature_out_of_range_keeps_the_default(
    chromium: Browser, server: LiveServer
) -> None:
    tab = open_tab(chromium, server, viewport={"width": 1280, "height": 900})
    open_settings(tab)
    type_temperature(tab, "5")
    problem = "Temperature must be from 0 to 2, not 5"
    expect(tab.locator("#settings-note")).to_have_text(f"{problem}. {NOT_SAVED}")
    expect(tab.locator(TEMPERATURE)).to_have_value("5")
    send(tab, "a cool new chat")
    sent = f"{problem}. Your message was sent; the new chat keeps that setting's default"
    expect(toast(tab, sent)).to_be_visible()
    expect(user_messages(tab)).to_have_count(1)
    wait_idle(tab)
    interpreter = session_starting(server, "a cool new chat")
    model: ScriptedModel = server.state.model
    asked = model.requests[-1].settings
    assert asked is not None and asked.temperature is None  # (the model's default)
    assert settings_of(server, interpreter).temperature is None
    tab.reload(wait_until="load")
    open_settings(tab)
    expect(tab.locator(TEMPERATURE)).to_have_value("1")  # (how an unset one shows)
    tab.context.close()
