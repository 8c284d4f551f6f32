"""A replay in a real browser, started while a chat is open: the page shows no chat chosen
while it plays (the list, the Title box, the settings), so picking the chat shown before
opens it again, and a message sent after the replay starts a new chat with a new chat's
settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    bot_messages,
    chat,
    eventually,
    open_manage,
    send,
    session_starting,
    upload,
    user_messages,
    wait_idle,
)
from tests.backends.gradio.test_page_settings_hunt8 import open_settings, settings_of

pytestmark = pytest.mark.browser


def test_after_a_replay_the_chat_shown_before_opens_again_from_the_list(
    tab: Page, server: LiveServer, tmp_path: Path
) -> None:
    send(tab, "remember the walrus")
    wait_idle(tab)
    before = session_starting(server, "remember the walrus")
    open_manage(tab)
    title = tab.locator("#rename-input textarea")
    expect(title).to_have_value("remember the walrus")
    with tab.expect_download() as download:
        tab.get_by_role("button", name="Export as JSON").click()
    saved = tmp_path / "export.json"
    download.value.save_as(saved)
    open_settings(tab)
    prompt = tab.locator("#system-prompt textarea")
    prompt.fill("Answer like a walrus.")
    prompt.press("Tab")  # (the box saves itself on leaving it)
    eventually(
        tab,
        lambda: settings_of(server, before).system_prompt == "Answer like a walrus.",
        "the system prompt's save",
    )

    upload(tab, "Replay a JSON export", saved)
    expect(chat(tab)).to_contain_text("End of the replay")
    sessions = tab.locator("#session-list")
    expect(sessions.locator("input:checked")).to_have_count(0)
    expect(title).to_have_value("")
    expect(prompt).not_to_have_value("Answer like a walrus.")

    sessions.get_by_text("remember the walrus").first.click()
    expect(chat(tab)).not_to_contain_text("End of the replay")
    expect(user_messages(tab)).to_have_count(1)
    expect(title).to_have_value("remember the walrus")
    expect(prompt).to_have_value("Answer like a walrus.")

    upload(tab, "Replay a JSON export", saved)
    expect(chat(tab)).to_contain_text("End of the replay")
    send(tab, "a walrus of my own")
    expect(bot_messages(tab).last).to_contain_text("You said: a walrus of my own")
    wait_idle(tab)
    after = session_starting(server, "a walrus of my own")
    assert after.id != before.id
    assert after.session.settings.system_prompt != "Answer like a walrus."
    assert len(before.session.history) == 2  # the chat shown before got nothing
