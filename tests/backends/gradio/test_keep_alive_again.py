"""A tab's keep-alive event started again after one ended (presence.py, follow.py), without a
browser: it catches the tab up on what changed while it had none, showing only the boxes
whose value changed, and a tab has one keep-alive at a time."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from backends.gradio.bases import Base
from backends.gradio.follow import TabNews
from backends.gradio.handlers import Handlers, tab_of
from backends.gradio.presence import Presence
from backends.gradio.stream import no_change
from backends.gradio.tabs import TabStreams
from connectors.scripted import ScriptedModel
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import MemoryStore
from schema import SessionUpdated
from tests.backends.gradio.kit import make_page

TAB = tab_of(None)  # (no request: user "local")


@pytest.fixture
async def handlers(tmp_path: Path) -> Handlers:
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(default="hi")),
        store=MemoryStore(),
        workspace_root=tmp_path,
    )
    return Handlers(manager, make_page(), icons={}, languages=(), models=())


async def test_a_keep_alive_started_again_catches_the_tab_up_on_what_it_missed(
    handlers: Handlers,
) -> None:
    page, manager = handlers.page, handlers.manager
    chat = await manager.create("local", title="Before")
    got = handlers.settings_values(chat)[page.form_base]  # what the tab got when it opened it
    # While the tab had no keep-alive (the server restarted: it knows nothing of the tab):
    await manager.rename(chat.id, "Renamed meanwhile", "local")
    settings = chat.session.settings.model_copy(update={"temperature": 0.3})
    await chat.update(settings=settings)
    await chat.update(autochat=chat.session.autochat.model_copy(update={"max_turns": 7}))

    presence = Presence(handlers)
    keep = presence.keep_open(None, "1", chat.id)  # type: ignore[arg-type]  # the page's 1st
    assert await anext(keep) == {page.tab_wake: "1.1"}  # the view settles: it may have moved on
    assert await asyncio.wait_for(anext(keep), 5) == {page.chats_wake: "1.2"}
    shown = await presence.follow(chat.id, "", None, got)  # type: ignore[arg-type]
    assert shown[page.rename_box] == "Renamed meanwhile"
    assert shown[page.temperature] == 0.3 and shown[page.max_turns] == 7
    assert [value for _label, value in shown[page.session_list]["choices"]] == [chat.id]
    # a box whose value did not change is left as it is: the person may be typing there
    assert page.system_prompt not in shown and page.max_tokens not in shown
    assert page.delay not in shown and page.token_budget not in shown
    base = Base.decode(shown[page.form_base])
    assert base is not None and base.values == {
        **Base.decode(got).values,
        "title": "Renamed meanwhile",
        "temperature": 0.3,
        "max_turns": 7,
    }
    assert await presence.follow(chat.id, "", None, base.encode()) == no_change()  # type: ignore[arg-type]

    waking = asyncio.ensure_future(anext(keep))  # it follows the chat the browser said
    await chat.update(autochat=chat.session.autochat.model_copy(update={"max_turns": 8}))
    assert await asyncio.wait_for(waking, 5) == {page.chats_wake: "1.3"}
    handlers.closing.set()
    await keep.aclose()


async def test_a_base_of_another_chat_gets_every_box_on_catching_up(handlers: Handlers) -> None:
    page = handlers.page
    chat = await handlers.manager.create("local", title="Shown")
    other = Base("another chat", {"temperature": 1.0}).encode()
    handlers.news.open(TAB, "local", catch_up=True)
    shown = await Presence(handlers).follow(chat.id, "", None, other)  # type: ignore[arg-type]
    assert shown[page.rename_box] == "Shown"
    assert shown[page.system_prompt] == chat.session.settings.system_prompt
    base = Base.decode(shown[page.form_base])
    assert base is not None and base.session_id == chat.id
    assert base.values == Base.decode(handlers.settings_values(chat)[page.form_base]).values


async def test_a_second_keep_alive_of_a_tab_ends_the_first_and_keeps_the_tab_followed(
    handlers: Handlers,
) -> None:
    page, manager = handlers.page, handlers.manager
    presence = Presence(handlers)
    first = presence.keep_open(None)  # type: ignore[arg-type]
    assert await anext(first) == no_change()
    ending = asyncio.ensure_future(anext(first))
    second = presence.keep_open(None, "1", "")  # type: ignore[arg-type]
    assert await anext(second) == no_change()  # (a new chat: no view to settle)
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(ending, 5)  # the first ended at once, with the tab still followed
    assert handlers.news.following(TAB) and manager.changes.listener_count("local") == 1
    assert await asyncio.wait_for(anext(second), 5) == {page.chats_wake: "1.1"}  # catching up
    waking = asyncio.ensure_future(anext(second))
    await presence.follow("", "", None)  # type: ignore[arg-type]
    made = await manager.create("local", title="made elsewhere")
    assert await asyncio.wait_for(waking, 5) == {page.chats_wake: "1.2"}
    shown = await presence.follow("", "", None)  # type: ignore[arg-type]
    assert [value for _label, value in shown[page.session_list]["choices"]] == [made.id]
    handlers.closing.set()
    await second.aclose()
    assert not handlers.news.following(TAB)


def test_news_opened_again_supersede_the_old_keep_alive_and_catch_up() -> None:
    news = TabNews()
    old = news.open(TAB, "local")
    assert not news.pending(TAB)
    assert news.in_order(TAB, "s1", "temperature", 5)
    new = news.open(TAB, "local", catch_up=True)
    assert not news.holds(TAB, old) and news.holds(TAB, new)
    news.forget(TAB, old)  # the old keep-alive ends: the new one's news stay
    assert news.following(TAB) and news.has_news(TAB, showing="s1")
    assert not news.in_order(TAB, "s1", "temperature", 4)  # the tab's saves keep their order
    news.listening(TAB)  # (starting to listen to the chat does not drop the catching up)
    news.notice(TAB, "s1", SessionUpdated(fields={"title": "elsewhere"}))
    assert news.take_catch_up(TAB) and not news.take_catch_up(TAB)
    assert news.take(TAB) == {"title"} and news.take_list(TAB, showing="s1")
    news.told(TAB)
    assert not news.has_news(TAB, showing="s1")
    news.forget(TAB, new)
    assert not news.following(TAB)


async def test_what_a_tab_shows_is_taken_from_the_browser_only_when_the_server_knows_nothing() -> (
    None
):
    streams = TabStreams()
    streams.assume(TAB, "said by the browser")
    assert streams.shown(TAB) == "said by the browser"
    assert not streams.overtaken(TAB, 1)  # shown by no event: any event of the tab counts
    await streams.supersede(TAB, 1, "opened")
    streams.assume(TAB, "said later by the browser")
    assert streams.shown(TAB) == "opened"
