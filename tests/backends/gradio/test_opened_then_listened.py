"""A tab opens a chat, and its keep-alive starts listening to the chat a moment later
(presence.py, tabs.py): what the chat did in between is not missed. Without a browser."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path

import pytest

from backends.gradio.bases import Base
from backends.gradio.handlers import Handlers, tab_of
from backends.gradio.presence import Presence
from backends.gradio.stream import Updates, no_change
from backends.gradio.tabs import TabStreams
from tests.backends.gradio.kit import make_page
from tests.gui_agent.helpers import scripted_manager

TAB = tab_of(None)  # (no request: user "local")


@pytest.fixture
async def handlers(tmp_path: Path) -> AsyncIterator[Handlers]:
    manager = scripted_manager(tmp_path, "the reply")
    yield Handlers(manager, make_page(), icons={}, languages=(), models=())
    await manager.close()


async def keep_alive(
    handlers: Handlers, keep_open_s: float = 30.0
) -> AsyncGenerator[Updates, None]:
    """The tab's keep-alive as the page starts it, past its first (empty) answer. It yields
    at least every `keep_open_s`: a wake that comes sooner was not its time running out."""
    keep = Presence(handlers, keep_open_s=keep_open_s).keep_open(None)  # type: ignore[arg-type]
    assert await anext(keep) == no_change()
    return keep


async def test_a_change_saved_elsewhere_before_the_keep_alive_listens_is_shown(
    handlers: Handlers,
) -> None:
    page = handlers.page
    chat = await handlers.manager.create("local", title="Shared")
    opened = await handlers.open_session(chat.id, "1", None)  # type: ignore[arg-type]
    got = opened[page.form_base]
    assert opened[page.max_turns] == 5
    # another tab saves the AutoChat limit before this tab's keep-alive listens to the chat
    await chat.update(autochat=chat.session.autochat.model_copy(update={"max_turns": 3}))
    keep = await keep_alive(handlers)
    assert await asyncio.wait_for(anext(keep), 5) == {page.chats_wake: "1"}
    shown = await Presence(handlers).follow(chat.id, "", None, got)  # type: ignore[arg-type]
    assert shown[page.max_turns] == 3
    assert page.system_prompt not in shown and page.rename_box not in shown  # not changed
    base = Base.decode(shown[page.form_base])
    assert base is not None and base.values["max_turns"] == 3
    # and it listens on from there: a later change wakes it as before
    waking = asyncio.ensure_future(anext(keep))
    await chat.update(autochat=chat.session.autochat.model_copy(update={"max_turns": 4}))
    assert await asyncio.wait_for(waking, 5) == {page.chats_wake: "2"}
    handlers.closing.set()
    await keep.aclose()


async def test_a_reply_made_before_the_keep_alive_listens_settles_the_view(
    handlers: Handlers,
) -> None:
    page = handlers.page
    chat = await handlers.manager.create("local")
    opened = await handlers.open_session(chat.id, "1", None)  # type: ignore[arg-type]
    assert "the reply" not in str(opened[page.chatbot])
    await chat.send("sent through the API meanwhile")  # a whole turn before it listens
    await chat.wait_idle()
    keep = await keep_alive(handlers)
    assert await asyncio.wait_for(anext(keep), 5) == {page.tab_wake: "1"}
    handlers.closing.set()
    await keep.aclose()


async def test_the_tabs_own_save_before_its_keep_alive_listens_leaves_its_boxes_alone(
    handlers: Handlers,
) -> None:
    page = handlers.page
    chat = await handlers.manager.create("local", title="Before")
    opened = await handlers.open_session(chat.id, "1", None)  # type: ignore[arg-type]
    saved = Base.decode(opened[page.form_base])
    assert saved is not None
    await chat.update(title="Typed here")  # the tab's own rename: its base has it
    got = saved.with_values(chat.id, {"title": "Typed here"}).encode()
    keep = await keep_alive(handlers)
    assert await asyncio.wait_for(anext(keep), 5) == {page.chats_wake: "1"}
    shown = await Presence(handlers).follow(chat.id, "", None, got)  # type: ignore[arg-type]
    assert page.rename_box not in shown  # what the person may type on is left as it is
    assert shown[page.form_base] == got
    handlers.closing.set()
    await keep.aclose()


async def test_a_chat_that_did_not_change_before_the_keep_alive_listens_wakes_nothing(
    handlers: Handlers,
) -> None:
    chat = await handlers.manager.create("local")
    await handlers.open_session(chat.id, "1", None)  # type: ignore[arg-type]
    keep = await keep_alive(handlers, keep_open_s=0.3)
    assert await asyncio.wait_for(anext(keep), 5) == no_change()  # its time ran out
    handlers.closing.set()
    await keep.aclose()


def test_where_a_tab_opened_a_chat_is_read_once_and_only_for_that_chat() -> None:
    streams = TabStreams()
    streams.built(TAB, "chat-a", 7)
    assert streams.built_at(TAB, "chat-a") == 7
    assert streams.built_at(TAB, "chat-a") is None  # read once
    streams.built(TAB, "chat-a", 7)
    streams.built(TAB, "chat-b", 9)  # the tab opened another chat since
    assert streams.built_at(TAB, "chat-a") is None
    streams.built(TAB, "chat-b", 9)
    streams.forget(TAB)  # the tab closed
    assert streams.built_at(TAB, "chat-b") is None
