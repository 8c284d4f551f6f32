"""The chat page in a real browser (QA pass 36): Clear chat's question in view, the keyboard
back in the message box after Send, Stop and New chat, the chat's buttons under the approval
panel, and long lines of a tool's output wrapped (see kit.py for the scripted model and
conftest.py for the fixtures)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.backends.gradio.kit import badge, bot_messages, chat, send, wait_idle

pytestmark = pytest.mark.browser

IN_VIEW = """(selector) => {
  const box = document.querySelector(selector)?.getBoundingClientRect();
  return Boolean(box) && box.height > 0 && box.top >= -1 && box.bottom <= innerHeight + 1;
}"""


def test_clear_chats_question_opens_in_view(tab: Page) -> None:
    """On a 1400x900 window the "Delete every message of this chat?" row opened below the
    window's bottom edge, and Clear chat seemed to do nothing."""
    tab.set_viewport_size({"width": 1400, "height": 900})
    send(tab, "something to clear")
    wait_idle(tab)
    tab.locator("#clear-btn").click()
    expect(tab.locator("#confirm-clear-btn")).to_be_visible()
    tab.wait_for_function(IN_VIEW, arg="#confirm-clear-row")
    tab.locator("#cancel-clear-btn").click()
    expect(tab.locator("#confirm-clear-row")).to_be_hidden()


def test_the_keyboard_goes_back_to_the_message_box_after_send_stop_and_new_chat(
    tab: Page,
) -> None:
    """After a click on Send the focus stayed on Send, after Stop it went to the page (the
    button is disabled as the turn ends), after New chat it stayed there: the person had to
    click into the box before typing on."""
    box = tab.locator("#chat-input textarea")
    box.fill("slow reply please")
    tab.locator("#send-btn").click()
    expect(badge(tab)).to_have_text("Working…")
    expect(box).to_be_focused()
    tab.locator("#stop-btn").click()
    wait_idle(tab)
    expect(box).to_be_focused()
    tab.locator("#new-session-btn").click()
    expect(badge(tab)).to_have_text("Ready")
    expect(box).to_be_focused()


_CHAT_BUTTONS_UNDER_PANEL = """() => {
  const panel = document.querySelector('#approval-panel');
  const edge = panel.getBoundingClientRect();
  const shown = [...document.querySelectorAll('#chatbot button')]
    .map((button) => [button, button.getBoundingClientRect()])
    .filter(([, r]) => r.width > 0 && r.top < edge.bottom && r.bottom > edge.top
      && r.left < edge.right && r.right > edge.left);
  const onTop = shown.filter(([, r]) => {
    const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
    return hit !== null && !panel.contains(hit);
  });
  return [shown.length, onTop.length];
}"""


def test_the_chats_buttons_stay_under_the_approval_panel(tab: Page) -> None:
    """The approval panel sticks over the chat's bottom: a message's copy button was drawn
    on the panel's text ("In full (python):")."""
    tab.set_viewport_size({"width": 1400, "height": 900})
    send(tab, "a first message\n" * 6)
    wait_idle(tab)
    send(tab, "python: print('panel')")
    expect(badge(tab)).to_have_text("Waiting for your approval")
    expect(tab.locator("#approval-code")).to_contain_text("print('panel')")
    try:
        overlapped, on_top = tab.evaluate(_CHAT_BUTTONS_UNDER_PANEL)
        assert overlapped > 0, "the panel should cover the chat's bottom here"
        assert on_top == 0, f"{on_top} of the chat's buttons are drawn on the approval panel"
    finally:
        tab.locator("#deny-btn").click()
        wait_idle(tab)


_OUTPUT_OVERFLOW = """() => [...document.querySelectorAll(
    '#chatbot pre:has(> code.language-output), #chatbot pre:has(> code.language-text)')]
  .filter((pre) => pre.clientWidth > 0)
  .map((pre) => pre.scrollWidth - pre.clientWidth)"""


def test_long_lines_of_a_tools_output_wrap(tab: Page) -> None:
    """A long line in an Output (or Interrupted) pane ran out of sight, cut off, to be
    scrolled sideways: the app's own note there too ("Interrupted while running: …")."""
    send(tab, "python: print('a long line of output ' * 40)")
    tab.get_by_role("button", name="Allow once").click()
    wait_idle(tab)
    expect(bot_messages(tab).last).to_contain_text("Result: a long line of output")
    chat(tab).get_by_text("run_python", exact=True).first.click()
    expect(tab.locator("#chatbot code.language-output").first).to_be_visible()
    overflow = tab.evaluate(_OUTPUT_OVERFLOW)
    assert overflow, "the output pane should show"
    assert max(overflow) <= 1, f"an output line runs {max(overflow)} px out of its pane"
