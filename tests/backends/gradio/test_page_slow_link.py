"""In a real browser on a slow connection (300 ms each way, as to a server far away): what a
person does while their last action is still on its way is not dropped. Gradio's default
for an event ("once") ignores the event's trigger while the last one is pending; these
events wait for it or run beside it instead (app.py)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from schema import AgentName
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    bot_messages,
    chat,
    eventually,
    open_manage,
    pick,
    send,
    session_of,
    session_starting,
    settle,
    tiny_png,
    upload,
    user_messages,
    wait_idle,
)
from tests.backends.gradio.test_page_settings_hunt8 import open_advanced

pytestmark = pytest.mark.browser

LATENCY_MS = 300


def slow_link(tab: Page, latency_ms: int = LATENCY_MS) -> None:
    """Every request of the tab takes `latency_ms` more (Chromium's network emulation)."""
    cdp = tab.context.new_cdp_session(tab)
    cdp.send("Network.enable")
    conditions = {"latency": latency_ms, "downloadThroughput": -1, "uploadThroughput": -1}
    cdp.send("Network.emulateNetworkConditions", {"offline": False, **conditions})


def test_a_setting_changed_again_while_its_last_save_is_on_its_way_is_saved(
    tab: Page, server: LiveServer
) -> None:
    send(tab, f"settings on a slow link {uuid.uuid4().hex[:8]}")
    wait_idle(tab)
    interpreter = session_of(server, tab)
    open_advanced(tab)
    slow_link(tab)
    box = tab.locator("#memory-exchanges input")
    box.focus()
    box.press("Tab")  # left unchanged: a save goes (and takes 300 ms to arrive)
    box.fill("6")
    box.press("Tab")  # left again at once, changed

    def saved() -> bool:
        return bool(interpreter.session.settings.memory_exchanges == 6)

    eventually(tab, saved, "the second save")
    prompt = tab.locator("#system-prompt textarea")  # the system prompt, the same way
    prompt.focus()
    prompt.press("Tab")
    prompt.fill("Answer in one line.")
    prompt.press("Tab")

    def prompt_saved() -> bool:
        return bool(interpreter.session.settings.system_prompt == "Answer in one line.")

    eventually(tab, prompt_saved, "the system prompt's second save")
    tab.reload(wait_until="load")
    expect(user_messages(tab)).to_have_count(1)
    open_advanced(tab)
    expect(box).to_have_value("6")
    expect(prompt).to_have_value("Answer in one line.")


def test_a_chat_picked_while_the_last_pick_is_on_its_way_is_the_one_shown(
    tab: Page, server: LiveServer
) -> None:
    run = uuid.uuid4().hex[:8]
    for name in ("one", "two"):
        send(tab, f"chat {name} {run}")
        wait_idle(tab)
        tab.locator("#new-session-btn").click()
        expect(user_messages(tab)).to_have_count(0)
    tab.locator("#session-search textarea").fill(run)
    expect(tab.locator("#session-list label")).to_have_count(2)
    slow_link(tab)
    listed = tab.locator("#session-list")
    listed.get_by_text(f"chat one {run}").click()
    listed.get_by_text(f"chat two {run}").click()  # before the first pick is back
    expect(user_messages(tab)).to_have_count(1)
    expect(user_messages(tab).first).to_have_text(f"chat two {run}")
    tab.wait_for_timeout(2 * LATENCY_MS)  # the first pick's answer has landed by now
    expect(user_messages(tab).first).to_have_text(f"chat two {run}")
    two = session_starting(server, f"chat two {run}")
    expect(listed.locator("input:checked")).to_have_value(two.id)
    send(tab, f"goes to chat two {run}")  # and Send uses the chat shown
    expect(bot_messages(tab).last).to_contain_text(f"You said: goes to chat two {run}")
    assert session_starting(server, f"chat one {run}").session.history[-1].content == (
        f"You said: chat one {run}"
    )


def test_two_images_attached_one_right_after_the_other_both_go(
    tab: Page, server: LiveServer, tmp_path: Path
) -> None:
    first, second = tmp_path / "first.png", tmp_path / "second.png"
    first.write_bytes(tiny_png())
    second.write_bytes(tiny_png())
    slow_link(tab)
    upload(tab, "Attach images", first)
    upload(tab, "Attach images", second)  # before the first is back
    expect(tab.locator("#attach-note")).to_contain_text("2 images")
    send(tab, f"two pictures {uuid.uuid4().hex[:8]}")
    wait_idle(tab)
    [sent] = [m for m in session_of(server, tab).session.history if m.images]
    assert len(sent.images) == 2


def test_a_title_changed_again_while_the_last_rename_is_on_its_way_is_kept(
    tab: Page, server: LiveServer
) -> None:
    run = uuid.uuid4().hex[:8]
    send(tab, f"a chat to rename {run}")
    wait_idle(tab)
    interpreter = session_of(server, tab)
    open_manage(tab)
    title = tab.locator("#rename-input textarea")
    expect(title).to_have_value(f"a chat to rename {run}")
    # (slower: at 300 ms, the first rename was back before the second Enter was pressed)
    slow_link(tab, 5 * LATENCY_MS)
    settle(tab)  # (the box's value came from the server just now)
    title.fill(f"first title {run}")
    title.press("Enter")
    title.fill(f"second title {run}")
    title.press("Enter")  # before the first rename is back

    def renamed() -> bool:
        return bool(interpreter.session.title == f"second title {run}")

    eventually(tab, renamed, "the second title")
    expect(tab.locator("#session-list")).to_contain_text(f"second title {run}")


def test_a_role_picked_again_while_the_last_pick_is_on_its_way_is_the_one_kept(
    tab: Page, server: LiveServer
) -> None:
    send(tab, f"a chat of roles {uuid.uuid4().hex[:8]}")
    wait_idle(tab)
    interpreter = session_of(server, tab)
    slow_link(tab, 5 * LATENCY_MS)  # (as for the title: a pick takes two clicks)
    pick(tab, "role-picker", "Planner")
    pick(tab, "role-picker", "Thought")  # before the first pick is back

    def picked() -> bool:
        return bool(interpreter.session.agent is AgentName.THOUGHT)

    eventually(tab, picked, "the second pick")
    expect(tab.locator("#role-picker input")).to_have_value("Thought")
    expect(chat(tab)).to_contain_text("Switched to Thought")
