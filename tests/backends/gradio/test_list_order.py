"""A tab's chats list never goes back to a reading older than the one it shows
(list_order.py): Gradio runs a tab's events at the same time, and a list read before a
rename could be shown after the rename's own, putting the old title back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from backends.gradio.handlers import tab_of
from backends.gradio.list_order import ListOrder
from backends.gradio.presence import Presence
from backends.gradio.sidebar import Sidebar
from connectors.scripted import ScriptedModel
from tests.backends.gradio.kit import page_handlers


def test_a_reading_older_than_the_one_a_tab_got_is_not_shown_to_it() -> None:
    lists = ListOrder()
    first, second = lists.begin(), lists.begin()
    assert second > first
    assert lists.take_up("tab-a", second)
    assert not lists.take_up("tab-a", first)  # done later, but read earlier
    assert lists.take_up("tab-b", first)  # another tab's list is its own
    third = lists.begin()
    assert lists.take_up("tab-a", third) and lists.take_up("tab-a", third)


def _held_at_first_reading(
    list_sessions: Callable[..., Coroutine[Any, Any, Any]],
) -> tuple[Callable[..., Coroutine[Any, Any, Any]], asyncio.Event, asyncio.Event]:
    """`list_sessions`, whose first call waits for `go` after it has read the store (and
    sets `read` then): a reading that finishes after the ones that come after it."""
    read, go = asyncio.Event(), asyncio.Event()
    calls = 0

    async def held(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        records = await list_sessions(*args, **kwargs)
        if calls == 1:
            read.set()
            await go.wait()
        return records

    return held, read, go


async def test_a_list_read_before_a_rename_and_done_after_it_leaves_the_new_title(
    tmp_path: Path,
) -> None:
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="hi"))
    interpreter = await manager.create("local")
    await interpreter.update(title="The old title")
    tab = tab_of(None)
    handlers.news.open(tab, "local")
    await handlers.streams.supersede(tab, 1, interpreter.id)  # the tab shows this chat
    held, read, go = _held_at_first_reading(manager.store.list_sessions)
    manager.store.list_sessions = held  # type: ignore[method-assign]
    # A change made elsewhere: the tab follows it, and reads the list (the old title).
    handlers.news.chats_changed("local", by="local\0another-tab")
    following = asyncio.ensure_future(Presence(handlers).follow(interpreter.id, "", None))  # type: ignore[arg-type]
    await asyncio.wait_for(read.wait(), 5)
    renamed = await Sidebar(handlers).rename(interpreter.id, "The new title", "", None)  # type: ignore[arg-type]
    labels = [label for label, _id in renamed[page.session_list]["choices"]]
    assert any("The new title" in label for label in labels), labels
    go.set()
    followed = await asyncio.wait_for(following, 5)
    assert page.session_list not in followed  # the tab keeps the renamed list
    # A reading that starts after the rename is shown, as before.
    handlers.news.chats_changed("local", by="local\0another-tab")
    again = await Presence(handlers).follow(interpreter.id, "", None)  # type: ignore[arg-type]
    labels = [label for label, _id in again[page.session_list]["choices"]]
    assert any("The new title" in label for label in labels), labels
    await manager.close()


def test_a_tabs_list_is_filtered_by_what_its_search_box_was_last_given() -> None:
    lists = ListOrder()
    assert lists.query("tab-a", "carried") == "carried"  # (nothing searched yet)
    lists.searched("tab-a", "sheep")
    assert lists.query("tab-a", "") == "sheep"
    assert lists.query("tab-b", "") == ""  # another tab's search is its own
    lists.searched("tab-a", "")
    assert lists.query("tab-a", "goats") == ""


async def test_a_list_refresh_carrying_the_query_from_before_the_search_keeps_the_search(
    tmp_path: Path,
) -> None:
    """A send's list refresh carries the search box as it was when the send's turn ended:
    one that ran after a search typed since listed every chat under the typed query (a
    Gradio test's CI flake: 7 chats listed for a search that matched 1)."""
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="hi"))
    try:
        for title in ("sheep to count", "goats to milk", "cows to feed"):
            chat = await manager.create("local")
            await chat.update(title=title)
        sidebar = Sidebar(handlers)

        def titles(updates: dict[Any, Any]) -> list[str]:
            return [label for label, _id in updates[page.session_list]["choices"]]

        searched = await sidebar.search("sheep", "", None)  # type: ignore[arg-type]
        assert len(titles(searched)) == 1
        refreshed = await sidebar.refresh_list("", "", "", None)  # type: ignore[arg-type]
        assert len(titles(refreshed)) == 1 and "sheep to count" in titles(refreshed)[0]
        # New chat empties the search box: the lists after it show every chat again.
        emptied = await handlers.new_chat("2", None)  # type: ignore[arg-type]
        assert emptied[page.search] == "" and len(titles(emptied)) == 3
        refreshed = await sidebar.refresh_list("", "sheep", "", None)  # type: ignore[arg-type]
        assert len(titles(refreshed)) == 3
    finally:
        await manager.close()
