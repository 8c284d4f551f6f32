"""The chat page in a real browser: a tool's mode set in a new chat, before its first message
saves it, holds from that first message on. Before, the page refused it ("Send a message
first") and the first turn ran with the app's own modes (see kit.py for the scripted
model: "python: CODE" calls run_python, which asks first by default)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import bot_messages, send, session_of, toast, wait_idle

pytestmark = pytest.mark.browser


def _set_mode(tab: Page, tool: str, mode: str) -> None:
    tab.locator("#tool-picker input").click()
    tab.get_by_role("option", name=tool).click()
    tab.locator("#tool-mode").get_by_text(mode).click()


def test_a_tool_set_to_run_unasked_in_a_new_chat_runs_unasked_in_its_first_turn(
    tab: Page, server: LiveServer
) -> None:
    tools = tab.locator("#tools-panel")
    _set_mode(tab, "run_python", "Run without asking")
    expect(toast(tab, "run_python: runs without asking")).to_be_visible()
    expect(tools).to_contain_text("run_python: runs without asking (set for this chat)")
    expect(tab.locator("#tool-mode").get_by_label("Run without asking")).to_be_checked()

    send(tab, "python: print('ran at once')")
    wait_idle(tab)  # no approval asked
    expect(bot_messages(tab).last).to_contain_text("ran at once")
    expect(tools).to_contain_text("run_python: runs without asking (set for this chat)")
    assert session_of(server, tab).session.settings.permissions == {"run_python": "allow"}

    tab.locator("#new-session-btn").click()  # the next new chat starts with the app's modes
    expect(tools).to_contain_text("run_python: asks you first")
    send(tab, "python: print('asked this time')")
    expect(tab.locator("#approve-once-btn")).to_be_visible()
    tab.locator("#deny-btn").click()
    wait_idle(tab)


KEPT = "() => sessionStorage.getItem('gui-agent-unsaved:' + location.pathname)"
"""What the page keeps of a new chat not yet made (unsaved.py; null: nothing)."""


def test_a_mode_set_in_a_new_chat_comes_back_after_a_reload_until_another_view(
    tab: Page, server: LiveServer
) -> None:
    """The server keeps a new chat's modes by tab, and a reloaded page is another tab to it:
    the page keeps them too, and brings them back. Once a chat is made with them, or the
    person starts another new chat, they are let go."""
    tools = tab.locator("#tools-panel")
    _set_mode(tab, "run_python", "Never run")
    expect(tools).to_contain_text("run_python: never runs (set for this chat)")
    _set_mode(tab, "run_python", "Run without asking")  # the latest choice is kept
    expect(tools).to_contain_text("run_python: runs without asking (set for this chat)")
    tab.reload(wait_until="load")
    expect(tools).to_contain_text("run_python: runs without asking (set for this chat)")
    send(tab, "python: print('ran at once')")
    wait_idle(tab)  # no approval asked
    expect(bot_messages(tab).last).to_contain_text("ran at once")
    assert session_of(server, tab).session.settings.permissions == {"run_python": "allow"}
    assert tab.evaluate(KEPT) is None  # in the chat now: nothing kept for a reload

    tab.locator("#new-session-btn").click()
    expect(tools).to_contain_text("run_python: asks you first")
    _set_mode(tab, "run_python", "Never run")
    expect(tools).to_contain_text("run_python: never runs (set for this chat)")
    assert '"deny"' in str(tab.evaluate(KEPT))
    tab.locator("#new-session-btn").click()  # another new chat: the app's own modes
    expect(tools).to_contain_text("run_python: asks you first")
    assert "deny" not in str(tab.evaluate(KEPT))
    tab.reload(wait_until="load")
    send(tab, "python: print('asked this time')")
    expect(tab.locator("#approve-once-btn")).to_be_visible()
    tab.locator("#deny-btn").click()
    wait_idle(tab)
