"""A tab's events racing each other on a loaded server (no browser: the handlers are driven
in the order a slow server runs them)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from backends.gradio.handlers import Handlers
from backends.gradio.layout import Page
from backends.gradio.tabs import SHOWN_KEPT, TabStreams
from connectors.scripted import ScriptedModel
from gui_agent.manager import SessionManager
from gui_agent.store import MemoryStore
from schema import SessionRecord
from tests.backends.gradio.kit import page_handlers


class SlowStore(MemoryStore):
    """A store whose writes of new sessions wait until the test lets them through (a
    database under load)."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = asyncio.Event()
        self.let_through = asyncio.Event()

    async def create_session(self, record: SessionRecord) -> None:
        self.writing.set()
        await self.let_through.wait()
        await super().create_session(record)


async def _collect(updates: AsyncIterator[dict[Any, Any]]) -> list[dict[Any, Any]]:
    return [update async for update in updates]


async def _slowly_saving(tmp_path: Path) -> tuple[Page, SlowStore, SessionManager, Handlers]:
    """A page's handlers on a started manager whose store saves new chats when let through
    (its model answers "the reply")."""
    store = SlowStore()
    page, manager, handlers = await page_handlers(tmp_path, store=store)
    return page, store, manager, handlers


def _texts(update: dict[Any, Any], page: Page) -> list[str]:
    return [str(m["content"][0]["text"]) for m in update.get(page.chatbot, [])]


async def test_the_page_load_follow_up_does_not_blank_a_first_message_sent_at_once(
    tmp_path: Path,
) -> None:
    """A fresh tab sends its first message before the page-load event's follow-up (settle)
    has run; the server is slow to save the new chat. The follow-up must not show the empty
    new chat over the chat that message creates (the reply would vanish from view, and the
    tab's next message would start yet another chat)."""
    page, store, manager, handlers = await _slowly_saving(tmp_path)
    try:
        await handlers.on_load("", "1", "", None)  # type: ignore[arg-type]
        form = {page.chat_input: "hello", page.session_id: "", page.ticket: "2"}
        sending = asyncio.ensure_future(_collect(handlers.send(form, None)))  # type: ignore[arg-type]
        await store.writing.wait()  # the send is saving its new chat
        settling = asyncio.ensure_future(_collect(handlers.settle("", "3", None)))  # type: ignore[arg-type]
        for _ in range(20):
            await asyncio.sleep(0)
        store.let_through.set()
        sent, settled = await asyncio.wait_for(asyncio.gather(sending, settling), 10)
        (chat,) = await manager.list("local")
        shown = [u[page.session_id] for u in sent + settled if page.session_id in u]
        assert shown and set(shown) == {chat.id}, "no update shows the empty new chat"
        last = [u for u in sent + settled if page.chatbot in u][-1]
        assert any("the reply" in text for text in _texts(last, page))
    finally:
        await manager.close()


async def test_a_load_event_after_a_first_message_sent_at_once_leaves_its_reply_streaming(
    tmp_path: Path,
) -> None:
    """The person sent a first message before the page's load event ran, so the send is the
    tab's event 1 and the load event its event 2. The load event of a fresh tab (no chat to
    reopen) finds the page showing a new chat, as it would leave it: it must not end the
    reply's stream, which would leave the tab on an empty chat while its chat runs unseen."""
    words = [f"w{number}" for number in range(60)]
    model = ScriptedModel([" ".join(words)], delay_s=0.01)
    page, manager, handlers = await page_handlers(tmp_path, model)
    try:
        form = {page.chat_input: "hello", page.session_id: "", page.ticket: "1"}
        sending = handlers.send(form, None)  # type: ignore[arg-type]
        first = await anext(sending)
        (chat,) = await manager.list("local")
        assert first[page.session_id] == chat.id
        loaded = await handlers.on_load("", "2", "", None)  # type: ignore[arg-type]
        assert page.session_id not in loaded and page.chatbot not in loaded
        rest = await asyncio.wait_for(_collect(sending), 10)
        last = [u for u in rest if page.chatbot in u][-1]
        assert any(" ".join(words) in text for text in _texts(last, page))
        assert "Your turn" in str(last[page.badge])
    finally:
        await manager.close()


async def test_a_message_sent_while_the_first_is_still_making_its_chat_goes_to_that_chat(
    tmp_path: Path,
) -> None:
    """A fresh tab sends two messages at once: the second comes before the page knows the
    chat the first one makes (its session id is still empty), while the server is still
    saving that chat. It must go to that chat, not make a second one."""
    page, store, manager, handlers = await _slowly_saving(tmp_path)
    try:
        first = {page.chat_input: "first", page.session_id: "", page.ticket: "1"}
        second = {page.chat_input: "second", page.session_id: "", page.ticket: "2"}
        sending = asyncio.ensure_future(_collect(handlers.send(first, None)))  # type: ignore[arg-type]
        await store.writing.wait()  # the first send is saving its new chat
        following = asyncio.ensure_future(_collect(handlers.send(second, None)))  # type: ignore[arg-type]
        for _ in range(20):
            await asyncio.sleep(0)
        assert not following.done()  # it waits for the chat the first one makes
        store.let_through.set()
        await asyncio.wait_for(asyncio.gather(sending, following), 10)
        (chat,) = await manager.list("local")
        interpreter = await manager.get(chat.id, owner="local")
        await interpreter.wait_idle()
        said = [m.content for m in interpreter.session.history]
        assert said[0] == "first" and "second" in said
    finally:
        await manager.close()


async def test_a_message_sent_before_a_later_event_showed_the_chat_still_goes_to_that_chat(
    tmp_path: Path,
) -> None:
    """A fresh tab sends two messages at once. The first makes its chat; then an event the
    tab triggered after the second (a settle: the page-load follow-up, or a wake from the
    keep-alive) shows that chat, while it runs, before the second send reaches the server.
    The second still comes from the new chat the first one made: it goes to that chat, not
    to a second new one."""
    model = ScriptedModel(["one two three four five six"], delay_s=0.05)
    page, manager, handlers = await page_handlers(tmp_path, model)
    try:
        first = {page.chat_input: "first", page.session_id: "", page.ticket: "1:1"}
        second = {page.chat_input: "second", page.session_id: "", page.ticket: "2:2"}
        sending = handlers.send(first, None)  # type: ignore[arg-type]
        made = await anext(sending)
        (chat,) = await manager.list("local")
        assert made[page.session_id] == chat.id
        rest = asyncio.ensure_future(_collect(sending))
        settling = handlers.settle("", "3", None)  # type: ignore[arg-type]
        await anext(settling)  # it shows the running chat from event 3 on
        assert (await manager.get(chat.id, owner="local")).busy
        following = await asyncio.wait_for(_collect(handlers.send(second, None)), 10)  # type: ignore[arg-type]
        await asyncio.wait_for(asyncio.gather(rest, _collect(settling)), 10)
        assert [c.id for c in await manager.list("local")] == [chat.id], "one chat, not two"
        interpreter = await manager.get(chat.id, owner="local")
        await interpreter.wait_idle()
        said = [m.content for m in interpreter.session.history]
        assert said[0] == "first" and "second" in said, said
        assert all(u.get(page.session_id, chat.id) == chat.id for u in following)
    finally:
        await manager.close()


async def test_a_tab_remembers_what_each_of_its_latest_events_showed() -> None:
    """`made_before` answers for the tab's event numbered `ticket` from the latest event
    before it, whatever later events showed and in whatever order they came; it keeps a
    tab's last SHOWN_KEPT events, and forgets a closed tab."""
    streams = TabStreams()
    await streams.supersede("tab", 5, "")  # New chat
    await streams.supersede("tab", 9, "chat B")  # a later event came first
    await streams.supersede("tab", 7, "chat A")  # the first message made chat A
    assert streams.shown("tab") == "chat B"
    assert streams.made_before("tab", 5) == ""  # nothing before it
    assert streams.made_before("tab", 6) == ""  # (New chat)
    assert streams.made_before("tab", 8) == "chat A"
    assert streams.made_before("tab", 10) == "chat B"
    assert streams.made_before("other tab", 10) == ""
    for ticket in range(10, 10 + SHOWN_KEPT):
        await streams.supersede("tab", ticket, f"chat {ticket}")
    assert streams.made_before("tab", 8) == ""  # (forgotten: SHOWN_KEPT events later)
    assert streams.made_before("tab", 12) == "chat 11"
    streams.forget("tab")
    assert streams.made_before("tab", 12) == ""
