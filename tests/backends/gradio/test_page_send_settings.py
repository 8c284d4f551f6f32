"""In a real browser: a message sent right after a setting was typed is answered with the
setting the person sees, not the one saved before (the box's own save happens when it is
left, and can come after the send). A value out of range is named, that box keeps its
value, and the message goes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from connectors.scripted import ModelRequest, ScriptedModel
from gui_agent.interpreter import Interpreter
from schema import AutoChatSettings, Role
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    eventually,
    open_tab,
    send,
    served,
    session_starting,
    toast,
    user_messages,
    wait_idle,
)
from tests.backends.gradio.test_page_settings_hunt8 import (
    build,
    field,
    open_advanced,
    open_settings,
    settings_of,
)

pytestmark = pytest.mark.browser


@pytest.fixture
def server() -> Iterator[LiveServer]:
    """A server per test: each test reads the model's last request."""
    with served(build) as running:
        yield running


def started_chat(chromium: Browser, server: LiveServer, first: str) -> Page:
    tab = open_tab(chromium, server, viewport={"width": 1280, "height": 900})
    send(tab, first)
    wait_idle(tab)
    return tab


def write(tab: Page, text: str) -> None:
    """Write the message first, so the setting typed next is the box left focused."""
    tab.locator("#chat-input textarea").fill(text)


def click_send_staying_in_the_box(tab: Page) -> None:
    """Press Send without leaving the setting last typed: its own save (on leaving the box)
    has not happened when the send goes, as when that save comes after the send."""
    tab.locator("#send-btn").dispatch_event("click")


def settings_of_autochat(server: LiveServer, interpreter: Interpreter) -> AutoChatSettings:
    async def read() -> AutoChatSettings:
        return interpreter.session.autochat

    return server.call(read())


def last_request(server: LiveServer) -> ModelRequest:
    model: ScriptedModel = server.state.model
    return model.requests[-1]


def test_a_max_tokens_typed_then_sent_at_once_reaches_that_message(
    chromium: Browser, server: LiveServer
) -> None:
    tab = started_chat(chromium, server, "a chat for max tokens")
    interpreter = session_starting(server, "a chat for max tokens")
    open_advanced(tab)
    write(tab, "answer in 321 tokens")
    field(tab, "max-iterations").fill("7")
    field(tab, "max-tokens").fill("321")
    click_send_staying_in_the_box(tab)
    expect(user_messages(tab)).to_have_count(2)
    wait_idle(tab)
    asked = last_request(server).settings
    assert asked is not None and asked.max_tokens == 321
    saved = settings_of(server, interpreter)
    assert saved.max_tokens == 321 and saved.max_iterations == 7
    expect(tab.locator("#settings-note")).to_have_text("")

    # typed, then Enter in the message box (the setting's box is left on the way)
    field(tab, "max-tokens").fill("99")
    send(tab, "answer in 99 tokens")
    expect(user_messages(tab)).to_have_count(3)
    wait_idle(tab)
    asked = last_request(server).settings
    assert asked is not None and asked.max_tokens == 99
    expect(field(tab, "max-tokens")).to_have_value("99")
    tab.context.close()


def test_a_system_prompt_typed_then_sent_at_once_reaches_that_message(
    chromium: Browser, server: LiveServer
) -> None:
    tab = started_chat(chromium, server, "a chat for the prompt")
    open_settings(tab)
    write(tab, "hello there")
    prompt = tab.locator("#system-prompt textarea")
    prompt.fill("You answer like a pirate.")
    click_send_staying_in_the_box(tab)
    expect(user_messages(tab)).to_have_count(2)
    wait_idle(tab)
    system = [m for m in last_request(server).messages if m.role is Role.SYSTEM]
    assert system and system[0].content.startswith("You answer like a pirate.")
    interpreter = session_starting(server, "a chat for the prompt")
    assert settings_of(server, interpreter).system_prompt == "You answer like a pirate."
    expect(prompt).to_have_value("You answer like a pirate.")
    tab.context.close()


def test_a_value_out_of_range_typed_then_sent_is_named_and_the_message_goes(
    chromium: Browser, server: LiveServer
) -> None:
    tab = started_chat(chromium, server, "a chat with a bad value")
    interpreter = session_starting(server, "a chat with a bad value")
    open_advanced(tab)
    field(tab, "max-tokens").fill("4096")
    field(tab, "max-tokens").press("Tab")
    expect(tab.locator("#settings-note")).to_have_text("")
    # (the box saves itself on leaving it: wait for that save to reach the server)
    eventually(
        tab, lambda: settings_of(server, interpreter).max_tokens == 4096, "the box's own save"
    )
    before = settings_of(server, interpreter)

    write(tab, "still answered")
    field(tab, "max-iterations").fill("201")
    field(tab, "max-tokens").fill("555")
    click_send_staying_in_the_box(tab)
    expect(user_messages(tab)).to_have_count(2)
    problem = "Max steps per turn must be at most 200"
    expect(toast(tab, f"{problem}. Your message was sent")).to_be_visible()
    wait_idle(tab)
    asked = last_request(server).settings
    assert asked is not None and asked.max_tokens == 555  # the other box is taken
    assert settings_of(server, interpreter) == before.model_copy(update={"max_tokens": 555})
    expect(tab.locator("#settings-note")).to_contain_text(problem)
    expect(field(tab, "max-iterations")).to_have_value("201")  # left as typed, to fix
    tab.context.close()


def test_an_action_reads_a_setting_as_its_box_shows_it_not_as_gradio_last_heard(
    chromium: Browser, server: LiveServer
) -> None:
    """Gradio's copy of a box can lag what was just typed into it (a retry clicked in that
    instant went out with the old value): Retry reads the Advanced boxes themselves."""
    tab = started_chat(chromium, server, "a chat whose box is ahead of gradio")
    model: ScriptedModel = server.state.model
    before = len(model.requests)
    open_advanced(tab)
    # The box shows 444; Gradio is never told (no input event): its copy stays behind.
    field(tab, "max-tokens").evaluate("(box) => { box.value = '444'; }")
    tab.locator("#retry-btn").dispatch_event("click")
    eventually(tab, lambda: len(model.requests) > before, "the retry's model call")
    wait_idle(tab)
    asked = last_request(server).settings
    assert asked is not None and asked.max_tokens == 444
    tab.context.close()


def test_a_retry_or_autochat_started_at_once_runs_with_the_setting_just_typed(
    chromium: Browser, server: LiveServer
) -> None:
    tab = started_chat(chromium, server, "a chat to run again")
    model: ScriptedModel = server.state.model
    before = len(model.requests)
    open_advanced(tab)
    field(tab, "max-tokens").fill("222")
    tab.locator("#retry-btn").dispatch_event("click")  # the box is not left first
    # (the chat was idle already: wait for the retry's model call, then for its end)
    eventually(tab, lambda: len(model.requests) > before, "the retry's model call")
    wait_idle(tab)
    expect(user_messages(tab)).to_have_count(1)
    asked = last_request(server).settings
    assert asked is not None and asked.max_tokens == 222
    count = len(model.requests)

    tab.locator("#autochat-max-turns input").fill("1")
    tab.locator("#autochat-max-turns input").press("Tab")
    field(tab, "max-tokens").fill("333")
    tab.locator("#autochat-toggle input").dispatch_event("click")  # switched on: a turn runs
    expect(tab.locator("#autochat-status")).to_contain_text("AutoChat stopped")
    wait_idle(tab)
    assert len(model.requests) == count + 1
    asked = last_request(server).settings
    assert asked is not None and asked.max_tokens == 333
    tab.context.close()


def test_an_autochat_limit_whose_own_save_is_lost_still_counts_for_the_send(
    chromium: Browser, server: LiveServer
) -> None:
    tab = started_chat(chromium, server, "a chat for autochat limits")
    interpreter = session_starting(server, "a chat for autochat limits")
    limit = tab.locator("#autochat-max-turns input")
    limit.fill("2")
    limit.press("Tab")
    tab.locator("#autochat-toggle input").check()  # after a reply: it starts at once
    status = tab.locator("#autochat-status")
    expect(status).to_contain_text("AutoChat stopped after 2 automatic turns")
    expect(user_messages(tab)).to_have_count(3)  # the message and two continuations
    wait_idle(tab)

    # The limits save themselves as they are typed, in requests outside the queue; here
    # those are held back until the end (as when one comes after the send): the send
    # carries the limits.
    held: list[Route] = []

    def hold(route: Route) -> None:  # (Playwright needs a function of its own)
        held.append(route)

    tab.route("**/gradio_api/run/predict", hold)
    limit.fill("1")
    tab.locator("#autochat-token-budget input").fill("-3")  # out of range: named, not saved
    send(tab, "keep going")
    problem = "Token budget must be 0 (none) or more"
    expect(toast(tab, f"{problem}. Your message was sent")).to_be_visible()
    expect(user_messages(tab)).to_have_count(5)  # the send saved the 1: one turn
    expect(status).to_contain_text("AutoChat stopped after 1 automatic turn:")
    wait_idle(tab)
    saved = settings_of_autochat(server, interpreter)
    assert saved.max_turns == 1 and saved.token_budget is None

    tab.locator("#autochat-token-budget input").fill("100000")
    send(tab, "go on")
    expect(user_messages(tab)).to_have_count(7)
    wait_idle(tab)
    saved = settings_of_autochat(server, interpreter)
    assert saved.max_turns == 1 and saved.token_budget == 100000 and saved.enabled
    assert held  # (the limits' own saves were held back indeed)
    # Let through now, they come after the sends that carried the same values: older than
    # the sends, they change nothing (a field is saved in the tab's order).
    for route in held:
        route.continue_()
    tab.unroute("**/gradio_api/run/predict")
    expect(tab.locator("#autochat-limits-note")).to_have_text("")
    assert settings_of_autochat(server, interpreter) == saved
    tab.context.close()
