"""In a real browser: after a server restart (a new server on the same SQLite file, so no
event of the chat is buffered), the chat still shows the role the person picked with its
reason, before the message it answered, and the note under a reply the model cut off at its
output limit; and it shows them as the tab that watched them live did."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

import pytest
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, expect

from backends.gradio import create_app
from connectors.scripted import ScriptedModel
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import SQLiteStore
from schema import ModelResponse
from tests.backends.conftest import LiveServer, live_server
from tests.backends.gradio.kit import (
    Served,
    bot_messages,
    chat,
    mount_page,
    open_tab,
    pick,
    send,
    user_messages,
    wait_idle,
)

pytestmark = pytest.mark.browser

PICKED = "Switched to Thought from Executor (picked by the person)"
CUT_OFF = (
    "Cut off at the model's output limit: raise Max tokens in Settings › Advanced, "
    'or say "continue" for the rest.'
)


async def build_on(database: Path, workspace: Path) -> tuple[FastAPI, Served]:
    """The app, its chats kept in the SQLite file `database`; the model cuts off a reply
    when asked for a list."""
    model = ScriptedModel(
        ["noted", ModelResponse(text="The reasons are: one, two, th", finish_reason="length")],
        name="scripted",
        default="noted",
    )
    manager = SessionManager(
        models=StaticCatalog(model), store=SQLiteStore(database), workspace_root=workspace
    )
    ending = asyncio.Event()
    blocks = create_app(manager, notice=None, title="GuiAgent test", closing=ending)
    app, _assets = mount_page(blocks, manager)
    return app, Served(manager, ending)


def test_a_picked_role_and_a_cut_off_reply_are_shown_after_a_restart(
    chromium: Browser, tmp_path: Path
) -> None:
    build = functools.partial(build_on, tmp_path / "sessions.db", tmp_path)
    with live_server(build) as first:
        tab = open_tab(chromium, first)
        send(tab, "before the switch")
        wait_idle(tab)
        pick(tab, "role-picker", "Thought")
        expect(chat(tab)).to_contain_text(PICKED)
        send(tab, "list the reasons")
        wait_idle(tab)
        expect(bot_messages(tab).last).to_contain_text(CUT_OFF)
        watched = _messages(tab)
        tab.context.close()
        _close(first)
    with live_server(build) as second:
        tab = open_tab(chromium, second)
        tab.locator("#session-list").get_by_text("before the switch").first.click()
        expect(user_messages(tab)).to_have_count(2)
        expect(bot_messages(tab).last).to_contain_text(CUT_OFF)
        expect(chat(tab)).to_contain_text(PICKED)
        rebuilt = _messages(tab)
        assert sum("picked by the person" in text for text in rebuilt) == 1
        switch = next(number for number, text in enumerate(rebuilt) if PICKED in text)
        assert rebuilt[switch - 1].endswith("noted") and rebuilt[switch + 1] == "list the reasons"
        assert rebuilt == watched
        expect(bot_messages(tab).last.locator(".ga-cut-off")).to_be_visible()
        tab.context.close()
        _close(second)


def _messages(tab: Page) -> list[str]:
    """The text of every message the chat shows, in order (not the rows it does not draw,
    which part two bubbles: chat_entries.GAP)."""
    drawn = "#chatbot .message-row:not(:has(.ga-gap))"
    shown = f'{drawn} [data-testid="bot"], {drawn} [data-testid="user"]'
    return [text.strip() for text in tab.locator(shown).all_inner_texts()]


def _close(server: LiveServer) -> None:
    """Tell the open tabs the server is going (their keep-alive events end)."""

    async def say() -> None:
        server.state.closing.set()

    server.call(say())
