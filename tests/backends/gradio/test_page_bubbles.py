"""The chat page in a real browser: a crew's replies under its members' names, a switch of
role between turns and each message of the person's in a bubble of its own, the call to
approve read in full without scrolling sideways, and a model's id in an error shown whole as
code, not as a half link (see kit.py for the scripted model; the server here plays a model
that fails on "fail model" and "fail key", and whose crew's doer does what it is asked)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from playwright.sync_api import Page, expect

from connectors.function import FunctionInfo
from gui_agent.exceptions import ModelError
from schema import Message
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    Served,
    badge,
    bot_messages,
    build_playing,
    chat,
    pick,
    play,
    send,
    served,
    wait_idle,
)

pytestmark = pytest.mark.browser

MODEL_ID = "openai-compatible:http://127.0.0.1:9/v1#model-x"
VENDOR_ID = "anthropic:claude-sonnet-4-20250514"
_DOERS_BRIEF = "Do the task: "


async def _failing_or_playing(messages: list[Message], info: FunctionInfo) -> Any:
    last = messages[-1]
    if last.content == "fail model":
        raise ModelError(f"{MODEL_ID}: the connection to the server failed", provider=MODEL_ID)
    if last.content == "fail key":
        raise ModelError(f"{VENDOR_ID}: the key was refused", provider=VENDOR_ID)
    if last.content.startswith(_DOERS_BRIEF):  # the crew's doer plays what it was asked
        task = last.content.removeprefix(_DOERS_BRIEF)
        messages = [*messages[:-1], last.model_copy(update={"content": task})]
    return await play(messages, info)


async def _build() -> tuple[FastAPI, Served]:
    return await build_playing(_failing_or_playing)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with served(_build) as running:
        yield running


_BUBBLES = """() => [...document.querySelectorAll('#chatbot .message-row')]
  .filter((row) => row.getBoundingClientRect().height > 0)
  .map((row) => [row.classList.contains('user-row') ? 'user' : 'bot', row.innerText.trim()])"""
"""The bubbles drawn, in order: each as its side and its text."""

_BUTTONS = """() => [...document.querySelectorAll('#chatbot .message-buttons')]
  .filter((buttons) => buttons.getBoundingClientRect().height > 0).length"""
"""How many bubbles' buttons (copy) are drawn."""


def _bubbles(tab: Page) -> list[tuple[str, str]]:
    """The bubbles drawn; no bubble is empty, and each has its buttons (none stray)."""
    drawn = [(side, text) for side, text in tab.evaluate(_BUBBLES)]
    assert all(text for _, text in drawn), f"an empty bubble is drawn: {drawn}"
    assert tab.evaluate(_BUTTONS) == len(drawn), "buttons of no bubble are drawn"
    return drawn


_SPEAKERS_SEEN = """() => {
  window.__speakers = new Set();
  const root = document.querySelector('#chatbot');
  const note = () => root.querySelectorAll('.ga-agent')
    .forEach((name) => window.__speakers.add(name.innerText.trim()));
  new MutationObserver(note).observe(root, {subtree: true, childList: true, characterData: true});
}"""
"""Record every speaker's name the chat shows from now on, as replies stream too."""


def test_a_crews_replies_read_as_its_members_as_they_stream_and_after_a_reload(
    tab: Page,
) -> None:
    """The reviewer's reply was shown under "Thought" (the role its calls are made as, one
    the person can pick) and the doer's under "Executor", as they streamed too."""
    pick(tab, "role-picker", "Crew")
    tab.evaluate(_SPEAKERS_SEEN)
    send(tab, "stream 60")  # (the doer's reply streams: 60 words)
    expect(bot_messages(tab).last).to_contain_text("You said: You are the reviewer.")
    wait_idle(tab)
    speakers = tab.locator("#chatbot .ga-agent")
    crew = ["Crew · doer", "Crew · reviewer"]
    expect(speakers).to_have_text(crew)
    seen = tab.evaluate("() => [...window.__speakers]")
    assert set(seen) <= {"Crew", *crew}, seen  # ("Crew": its first reply, no member named yet)
    tab.reload(wait_until="load")
    expect(bot_messages(tab).last).to_contain_text("You said: You are the reviewer.")
    expect(speakers).to_have_text(crew)


def test_a_switch_of_role_between_turns_is_drawn_apart_from_the_reply_before(tab: Page) -> None:
    """Picked after a reply, "Switched to Thought from Executor" was drawn inside that
    reply's bubble, under its text, as if the reply said it. It is a bubble of its own,
    before the new speaker's, live and after a reload."""
    send(tab, "hello")
    wait_idle(tab)
    pick(tab, "role-picker", "Thought")
    expect(chat(tab)).to_contain_text("Switched to Thought from Executor")
    drawn = _bubbles(tab)
    [reply] = [text for _, text in drawn if "You said: hello" in text]
    assert "Switched" not in reply
    switch = ("bot", "Thought Switched to Thought from Executor (picked by the person)")
    assert drawn[-1] == switch
    send(tab, "and now")
    wait_idle(tab)
    expect(bot_messages(tab).last).to_contain_text("You said: and now")
    live = _bubbles(tab)
    assert [side for side, _ in live] == ["user", "bot", "bot", "user", "bot"], live
    assert live[2] == switch
    tab.reload(wait_until="load")
    expect(bot_messages(tab).last).to_contain_text("You said: and now")
    assert _bubbles(tab) == live


def test_messages_sent_while_a_reply_streams_are_a_bubble_each(tab: Page) -> None:
    """Two messages queued while a reply streamed, then read together by the agent, were
    drawn as one bubble: "queued A" and "queued B" on two lines of it."""
    send(tab, "stream 120")
    expect(bot_messages(tab).last).to_contain_text("word3")
    send(tab, "queued A")
    expect(chat(tab)).to_contain_text("queued A")
    send(tab, "queued B")
    expect(chat(tab)).to_contain_text("queued B")
    for moment in ("waiting", "answered", "reloaded"):
        if moment == "answered":
            wait_idle(tab)
            expect(bot_messages(tab).last).to_contain_text("You said: queued B")
        elif moment == "reloaded":
            tab.reload(wait_until="load")
            expect(bot_messages(tab).last).to_contain_text("You said: queued B")
        drawn = _bubbles(tab)
        people = [text.splitlines()[0] for side, text in drawn if side == "user"]
        assert people == ["stream 120", "queued A", "queued B"], (moment, drawn)


_APPROVAL_CODE = """() => {
  const pre = document.querySelector('#approval-code pre');
  const code = pre.querySelector('code') || pre;
  return [pre.scrollWidth - pre.clientWidth, pre.clientWidth, getComputedStyle(code).fontFamily];
}"""


def test_the_call_to_approve_wraps_its_long_lines_in_a_monospace_font(tab: Page) -> None:
    """A long line of the code to approve ran out of the panel, to be scrolled sideways:
    the person approved what they could not see. A long word (no space to break at) too."""
    words = "a_rather_long_name + " * 12
    send(tab, f"python: total = {words}0\nkey = '{'x' * 300}'")
    expect(badge(tab)).to_have_text("Waiting for your approval")
    expect(tab.locator("#approval-code")).to_contain_text("key = 'xxx")
    try:
        overflow, width, font = tab.evaluate(_APPROVAL_CODE)
        assert width > 0
        assert overflow <= 1, f"the code runs {overflow} px out of the panel, to scroll"
        assert "mono" in font.lower(), font
    finally:
        tab.get_by_role("button", name="Deny").click()
        wait_idle(tab)


def test_a_model_id_in_an_error_is_code_not_a_half_link(tab: Page) -> None:
    """Markdown linked the address inside the failing model's id: "openai-compatible:" as
    text, then "http://127.0.0.1:9/v1#model-x" as a link. Every model's id an error names
    reads as code, whole, live and after a reload."""
    for asked, model, said in (
        ("fail model", MODEL_ID, "the connection to the server failed"),
        ("fail key", VENDOR_ID, "the key was refused"),
    ):
        send(tab, asked)
        wait_idle(tab)
        error = bot_messages(tab).last
        expect(error).to_contain_text(said)
        assert error.locator("a").count() == 0, error.inner_html()
        expect(error.locator("code")).to_have_text(model)
    tab.reload(wait_until="load")
    expect(bot_messages(tab).last).to_contain_text("the key was refused")
    expect(chat(tab).locator(".ga-error + code")).to_have_text([MODEL_ID, VENDOR_ID])
    assert chat(tab).locator("a").count() == 0
