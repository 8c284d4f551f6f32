"""In a real browser: a message goes out as it was when the person sent it. Gradio reads
the input box a little after Enter or a click on Send (after its own awaits: tens of ms on
a busy page); the next message typed in that moment went out in its place, and the one sent
was lost (page.js takes the text as the person sends)."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import Page, expect

from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import bot_messages, send, session_starting, user_messages

pytestmark = pytest.mark.browser

# The next message is in the box in the same moment as the Enter or the click (a listener
# of the box or button itself: after the page's own, before Gradio reads the box, which it
# does after at least a tick).
TYPE_AHEAD_JS = """([how, next]) => {
  const box = document.querySelector("#chat-input textarea");
  const target = how === "enter" ? box : document.querySelector("#send-btn");
  target.addEventListener(how === "enter" ? "keydown" : "click", () => {
    box.value = next;
    box.dispatchEvent(new Event("input", {bubbles: true}));
  }, {once: true});
}"""


@pytest.mark.parametrize("how", ["enter", "click"])
def test_a_message_typed_as_the_last_one_goes_out_does_not_replace_it(
    tab: Page, server: LiveServer, how: str
) -> None:
    run = uuid.uuid4().hex[:8]
    box = tab.locator("#chat-input textarea")
    box.fill(f"sent first {run}")
    tab.evaluate(TYPE_AHEAD_JS, [how, f"typed next {run}"])
    if how == "enter":
        box.press("Enter")
    else:
        tab.locator("#send-btn").click()
    expect(user_messages(tab).first).to_have_text(f"sent first {run}")
    expect(box).to_have_value(f"typed next {run}")  # still there, not sent, not emptied
    expect(bot_messages(tab).last).to_contain_text(f"You said: sent first {run}")
    send(tab, f"sent second {run}")
    expect(bot_messages(tab).last).to_contain_text(f"You said: sent second {run}")
    said = [m.content for m in session_starting(server, f"sent first {run}").session.history]
    assert said == [
        f"sent first {run}",
        f"You said: sent first {run}",
        f"sent second {run}",
        f"You said: sent second {run}",
    ]


def test_a_message_no_send_event_takes_goes_back_in_the_box(tab: Page) -> None:
    run = uuid.uuid4().hex[:8]
    box = tab.locator("#chat-input textarea")
    box.fill(f"never sent {run}")
    # Gradio's handler (of the key press that follows the key down) never sees this Enter,
    # as when its connection is lost and it sends nothing: the page took the text and
    # emptied the box, and gives it back.
    tab.evaluate(
        """() => document.querySelector(".ga-input-row").addEventListener("keypress", (event) => {
          event.preventDefault();
          event.stopPropagation();
        }, {capture: true, once: true})"""
    )
    box.press("Enter")
    expect(box).to_have_value("")
    expect(box).to_have_value(f"never sent {run}", timeout=10_000)
    expect(user_messages(tab)).to_have_count(0)
    send(tab, f"sent after {run}")  # and the next send takes the next text
    expect(user_messages(tab)).to_have_count(1)
    expect(user_messages(tab).first).to_have_text(f"sent after {run}")


def test_a_message_sent_right_after_the_first_of_a_new_chat_goes_to_that_chat(
    tab: Page, server: LiveServer
) -> None:
    run = uuid.uuid4().hex[:8]
    box = tab.locator("#chat-input textarea")
    box.fill(f"first of a new chat {run}")
    box.press("Enter")
    box.fill(f"right after it {run}")  # before the page knows the chat the first one made
    box.press("Enter")
    expect(bot_messages(tab).last).to_contain_text(f"You said: right after it {run}")
    expect(user_messages(tab)).to_have_count(2)
    said = [
        m.content for m in session_starting(server, f"first of a new chat {run}").session.history
    ]
    assert said[0] == f"first of a new chat {run}" and f"right after it {run}" in said, said
    tab.locator("#session-search textarea").fill(run)
    expect(tab.locator("#session-list label")).to_have_count(1)  # one chat, not two
