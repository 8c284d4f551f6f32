"""The chats list: each chat's time says it is UTC, and a list cut at LISTED_CHATS says so
and how to reach the others (search)."""

from __future__ import annotations

from pathlib import Path

from backends.gradio.handlers import LISTED_CHATS
from connectors.scripted import ScriptedModel
from tests.backends.gradio.kit import page_handlers


async def test_a_long_list_says_it_shows_the_most_recent_and_times_say_utc(
    tmp_path: Path,
) -> None:
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="ok"))
    try:
        first = await manager.create("ada")
        await manager.update(first, title="the very first chat")
        update = await handlers.session_list_update("ada", "")
        ((label, _id),) = update[page.session_list]["choices"]
        assert label.startswith("the very first chat · ") and label.endswith(" UTC")
        assert update[page.session_list]["info"] == ""
        for number in range(LISTED_CHATS):
            made = await manager.create("ada")
            await manager.update(made, title=f"chat {number}")
        update = await handlers.session_list_update("ada", "")
        listed = update[page.session_list]["choices"]
        assert len(listed) == LISTED_CHATS
        assert first.id not in {value for _label, value in listed}, "the oldest is left out"
        info = update[page.session_list]["info"]
        assert info == f"Your {LISTED_CHATS} most recent chats: search to find others."
        found = await handlers.session_list_update("ada", "", "very first")
        assert [value for _label, value in found[page.session_list]["choices"]] == [first.id]
        assert found[page.session_list]["info"] == ""
    finally:
        await manager.close()
