"""A tab that missed a change made in another tab (its keep-alive died: the laptop slept,
or the server forgot the tab) still shows the old value. A send, a retry or the AutoChat
switch from it saves only the boxes the person changed in that tab, so it does not undo
the other tab's change of a box nobody touched there. Driven as the browser's events would
run them (no browser): each tab sends what its boxes show, and the values they last got."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from backends.gradio.follow import as_published
from backends.gradio.form import form_fields
from backends.gradio.handlers import Handlers, tab_of
from backends.gradio.layout import Page
from backends.gradio.presence import Presence
from backends.gradio.sidepanel import SidePanel
from connectors.scripted import ScriptedModel
from gui_agent.interpreter import Interpreter
from schema import AutoChatSettings, SessionSettings, SessionUpdated
from tests.backends.gradio.kit import page_handlers


@dataclass
class Tab:
    """One browser tab: what its components show, as the server last set them (or as the
    person typed), and its event numbers."""

    request: gr.Request
    shows: dict[Any, Any]
    tickets: int = 0

    def ticket(self) -> str:
        self.tickets += 1
        return str(self.tickets)

    def got(self, updates: dict[Any, Any]) -> None:
        """The browser applies a reply's updates (a left-out or skipped output stays)."""
        for component, value in updates.items():
            if not (isinstance(value, dict) and value.get("__type__") == "update"):
                self.shows[component] = value

    def form(self, page: Page, **typed: Any) -> dict[Any, Any]:
        """The person types into boxes (`typed`, by `Page` attribute; they keep it), then an
        event carries the form: every input as the tab shows it."""
        self.shows.update({getattr(page, name): value for name, value in typed.items()})
        return {**self.shows, page.ticket: self.ticket()}


@dataclass
class Two:
    page: Page
    handlers: Handlers
    side: SidePanel
    chat: Interpreter
    first: Tab
    second: Tab


@pytest.fixture
async def two_tabs(tmp_path: Path) -> AsyncIterator[Two]:
    """Two tabs of one user, both showing one chat whose temperature is 0.2."""
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="ok"))
    try:
        chat = await manager.create("local")
        await chat.update(settings=SessionSettings(temperature=0.2))
        tabs = []
        for name in ("tab-1", "tab-2"):
            tab = Tab(gr.Request(session_hash=name), {})
            handlers.news.open(tab_of(tab.request), "local")  # its keep-alive runs
            tab.got(await handlers.open_session(chat.id, tab.ticket(), tab.request))
            tabs.append(tab)
        yield Two(page, handlers, SidePanel(handlers), chat, tabs[0], tabs[1])
    finally:
        await manager.close()


async def drain(replies: AsyncIterator[dict[Any, Any]], tab: Tab) -> None:
    async for update in replies:
        tab.got(update)


async def asleep_then_changed_elsewhere(two: Two) -> None:
    """The second tab's keep-alive dies (the server forgets its news); the first tab then
    moves the temperature to 0.7 (its own save)."""
    page, first = two.page, two.first
    two.handlers.news.forget(tab_of(two.second.request))
    saver = two.side.settings_saver("temperature")
    first.got(await saver(first.form(page, temperature=0.7), first.request))
    assert two.chat.session.settings.temperature == 0.7
    assert two.second.shows[page.temperature] == 0.2  # it missed the change


async def test_a_send_from_a_tab_that_missed_a_change_does_not_undo_it(two_tabs: Two) -> None:
    page, second = two_tabs.page, two_tabs.second
    await asleep_then_changed_elsewhere(two_tabs)
    form = second.form(page, chat_input="hello from the sleepy tab")
    await drain(two_tabs.handlers.send(form, second.request), second)
    await two_tabs.chat.wait_idle()
    assert two_tabs.chat.session.history[-2].content == "hello from the sleepy tab"
    assert two_tabs.chat.session.settings.temperature == 0.7, "an untouched box undid it"


async def test_a_retry_or_the_autochat_switch_from_that_tab_does_not_undo_it(
    two_tabs: Two,
) -> None:
    page, handlers, second = two_tabs.page, two_tabs.handlers, two_tabs.second
    await drain(handlers.send(second.form(page, chat_input="a first turn"), second.request), second)
    await two_tabs.chat.wait_idle()
    await asleep_then_changed_elsewhere(two_tabs)
    await drain(handlers.retry(second.form(page), second.request), second)
    await two_tabs.chat.wait_idle()
    assert two_tabs.chat.session.settings.temperature == 0.7
    switched = second.form(page, autochat_toggle=True, max_turns=1)
    await drain(handlers.toggle_autochat(switched, second.request), second)
    await two_tabs.chat.wait_idle()
    assert two_tabs.chat.session.settings.temperature == 0.7
    auto = two_tabs.chat.session.autochat
    assert auto.enabled and auto.max_turns == 1, "the switch and the limit typed are saved"


async def test_a_box_the_person_changed_in_that_tab_is_saved_with_the_send(
    two_tabs: Two,
) -> None:
    """The person's own edit wins, even over a change made elsewhere meanwhile: the last
    writer is the one who typed it. The boxes left untouched keep the other tab's values."""
    page, second = two_tabs.page, two_tabs.second
    await asleep_then_changed_elsewhere(two_tabs)
    first = two_tabs.first
    first.got(
        await two_tabs.side.limit_saver("max_turns")(first.form(page, max_turns=9), first.request)
    )
    form = second.form(page, chat_input="cooler please", temperature=0.3, delay=2)
    await drain(two_tabs.handlers.send(form, second.request), second)
    await two_tabs.chat.wait_idle()
    assert two_tabs.chat.session.settings.temperature == 0.3
    auto = two_tabs.chat.session.autochat
    assert (auto.delay_s, auto.max_turns) == (2, 9)
    # What the send saved is what the tab got: a later change elsewhere that it misses
    # again is not undone by its next send.
    saver = two_tabs.side.settings_saver("temperature")
    first.got(await saver(first.form(page, temperature=0.8), first.request))
    form = second.form(page, chat_input="and now?")
    await drain(two_tabs.handlers.send(form, second.request), second)
    await two_tabs.chat.wait_idle()
    assert two_tabs.chat.session.settings.temperature == 0.8


async def test_a_box_saved_in_that_tab_is_not_saved_again_over_a_later_change(
    two_tabs: Two,
) -> None:
    """The second tab moved the temperature to 0.5 (saved as it moved), then missed the
    first tab moving it to 0.7: its next send leaves the 0.7 (its own change was saved
    already, and the 0.7 came after it)."""
    page, side, first, second = two_tabs.page, two_tabs.side, two_tabs.first, two_tabs.second
    saver = side.settings_saver("temperature")
    second.got(await saver(second.form(page, temperature=0.5), second.request))
    assert two_tabs.chat.session.settings.temperature == 0.5
    two_tabs.handlers.news.forget(tab_of(second.request))
    first.got(await saver(first.form(page, temperature=0.7), first.request))
    await drain(
        two_tabs.handlers.send(second.form(page, chat_input="still 0.7?"), second.request), second
    )
    await two_tabs.chat.wait_idle()
    assert two_tabs.chat.session.settings.temperature == 0.7


async def test_a_chat_made_by_a_tabs_first_message_is_not_undone_from_that_tab_either(
    two_tabs: Two,
) -> None:
    page, handlers, first, second = (
        two_tabs.page,
        two_tabs.handlers,
        two_tabs.first,
        two_tabs.second,
    )
    second.got(await handlers.new_chat(second.ticket(), second.request))
    made = second.form(page, chat_input="a chat of its own", temperature=0.4)
    await drain(handlers.send(made, second.request), second)
    chat = await handlers.manager.get(second.shows[page.session_id], "local")
    await chat.wait_idle()
    assert chat.session.settings.temperature == 0.4
    handlers.news.forget(tab_of(second.request))
    first.got(await handlers.open_session(chat.id, first.ticket(), first.request))
    saver = two_tabs.side.settings_saver("temperature")
    first.got(await saver(first.form(page, temperature=1.5), first.request))
    await drain(handlers.send(second.form(page, chat_input="and again"), second.request), second)
    await chat.wait_idle()
    assert chat.session.settings.temperature == 1.5


async def test_a_tab_that_followed_the_change_and_then_went_to_sleep_keeps_it(
    two_tabs: Two,
) -> None:
    """A live tab shows a change made elsewhere (`follow`); what it shows then is what it
    compares with, not what it showed when it opened the chat."""
    page, handlers, first, second = (
        two_tabs.page,
        two_tabs.handlers,
        two_tabs.first,
        two_tabs.second,
    )
    saver = two_tabs.side.settings_saver("temperature")
    first.got(await saver(first.form(page, temperature=0.7), first.request))
    handlers.news.notice(  # the second tab's keep-alive hears of it, and wakes it
        tab_of(second.request),
        two_tabs.chat.id,
        SessionUpdated(fields={"settings": as_published(two_tabs.chat.session.settings)}),
    )
    presence = Presence(handlers)
    second.got(
        await presence.follow(
            second.shows[page.session_id], "", second.request, second.shows[page.form_base]
        )
    )
    assert second.shows[page.temperature] == 0.7
    handlers.news.forget(tab_of(second.request))  # then it sleeps
    first.got(await saver(first.form(page, temperature=0.9), first.request))
    await drain(handlers.send(second.form(page, chat_input="good morning"), second.request), second)
    await two_tabs.chat.wait_idle()
    assert two_tabs.chat.session.settings.temperature == 0.9


@pytest.mark.parametrize(
    "base",
    [
        None,
        "",
        "not JSON",
        '["values"]',
        '{"session": "another chat", "values": {"temperature": 1.2, "max_turns": 3}}',
    ],
    ids=["none", "empty", "not-json", "not-ours", "another-chat"],
)
async def test_a_form_without_the_values_it_got_saves_what_differs_from_the_chat(
    two_tabs: Two, base: str | None
) -> None:
    """A tab opened before this rule (or an API caller) says nothing of what its boxes got,
    or what it says is not of this chat (a reply that came after the tab moved on): a box
    is saved when it differs from how the chat's value shows, as before."""
    page, handlers, second = two_tabs.page, two_tabs.handlers, two_tabs.second
    shown = handlers.settings_values(two_tabs.chat)
    form = {
        **{box: shown[box] for box in form_fields(page).values()},
        page.session_id: two_tabs.chat.id,
        page.temperature: 1.2,
        page.max_turns: 3,
        page.chat_input: "an old tab",
        page.ticket: "40",
    }
    if base is not None:
        form[page.form_base] = base
    await drain(handlers.send(form, second.request), second)
    await two_tabs.chat.wait_idle()
    assert two_tabs.chat.session.settings.temperature == 1.2
    assert two_tabs.chat.session.autochat == AutoChatSettings(max_turns=3)
