"""Tabs follow the session manager's change feed (follow.py, presence.py), without a browser:
a chat created, imported, renamed or deleted anywhere is news to every open tab of its
owner, but a tab's own change is not news to it (and no change reaches a tab twice); the
keep-alive listens for as long as the tab is open, and ends when its user is removed."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backends.gradio.follow import TabNews
from backends.gradio.handlers import Handlers
from backends.gradio.presence import REMOVED_NOTE, Presence
from backends.gradio.stream import no_change
from connectors.scripted import ScriptedModel
from gui_agent.export import export_session, read_import
from gui_agent.llm import StaticCatalog
from gui_agent.manager import Listening, SessionManager
from gui_agent.store import DB_FILE_NAME, SQLiteStore
from schema import SessionUpdated
from tests.backends.gradio.kit import make_page

A, B, C = "alice\0tab-a", "alice\0tab-b", "carol\0tab-c"


@pytest.fixture
async def manager(tmp_path: Path) -> AsyncIterator[SessionManager]:
    sessions = SessionManager(
        models=StaticCatalog(ScriptedModel(default="fine", name="scripted")),
        store=SQLiteStore(tmp_path / DB_FILE_NAME),
        workspace_root=tmp_path / "work",
    )
    await sessions.start()
    yield sessions
    await sessions.close()


def open_tabs(news: TabNews, manager: SessionManager) -> list[Listening]:
    """Three open tabs, each listening to its user's feed as its keep-alive does."""
    listening = []
    for tab, owner in ((A, "alice"), (B, "alice"), (C, "carol")):
        news.open(tab, owner)
        listening.append(manager.changes.listen(owner, functools.partial(news.changed, tab)))
    return listening


def woken(news: TabNews) -> list[bool]:
    """Which tabs have news, and they are told of it."""
    pending = [news.pending(tab) for tab in (A, B, C)]
    for tab in (A, B, C):
        news.told(tab)
    return pending


async def test_a_change_is_news_to_the_owners_other_tabs_but_not_to_the_one_making_it(
    manager: SessionManager,
) -> None:
    news = TabNews()
    for listening in open_tabs(news, manager):
        listening.__enter__()
    made = await manager.create("alice")  # e.g. through the API: news to both of hers
    assert woken(news) == [True, True, False]
    assert news.take_list(A, showing="") and news.take_list(B, showing="")

    made_here = await manager.create("alice", origin=A)  # A's first message made it
    assert woken(news) == [False, True, False]
    assert news.take_list(B, showing=made.id) and not news.take_list(A, showing="")
    made_unsaid = await manager.create("alice")  # made by A, which did not say so
    assert not news.has_news(A, showing=made_unsaid.id)  # it shows it: not woken for it
    assert news.has_news(B, showing=made_here.id)
    woken(news)

    news.saving(A, made.id, {"title": "Named in A"})  # A renames (sidebar.rename)
    await manager.update(made, title="Named in A", origin=A)
    assert woken(news) == [False, True, False]
    for tab in (A, B):  # the event of the rename comes to both keep-alives
        news.notice(tab, made.id, SessionUpdated(fields={"title": "Named in A"}))
    assert woken(news) == [False, True, False]  # B: its title box; not a second list refresh
    assert news.take(A) == set() and news.take(B) == {"title"}
    assert news.take_list(B, showing=made.id)

    record = made.session.to_record(made.state)
    document = json.dumps(export_session(record, made.session.history)).encode()
    imported = read_import(document, owner="alice")
    await manager.import_session(imported.record, imported.messages, origin=A)
    await manager.delete(made.id, "alice", origin=A)
    assert woken(news) == [False, True, False]
    assert not news.take_list(A, showing="") and news.take_list(B, showing="")


async def test_a_first_messages_title_is_passed_on_only_when_the_feed_did_not_tell_it(
    manager: SessionManager,
) -> None:
    news = TabNews()
    for listening in open_tabs(news, manager):
        listening.__enter__()
    made = await manager.create("alice")
    woken(news)
    news.notice(B, made.id, SessionUpdated(fields={"title": "from a first message"}))
    assert woken(news) == [True, True, False]  # the feed knows no such rename: B tells A
    await manager.rename(made.id, "renamed elsewhere", "alice")
    assert woken(news) == [True, True, False]
    news.notice(B, made.id, SessionUpdated(fields={"title": "renamed elsewhere"}))
    assert woken(news) == [False, True, False]  # the feed told A already


async def test_the_keep_alive_listens_while_the_tab_is_open_and_ends_when_its_user_goes(
    manager: SessionManager,
) -> None:
    page = make_page()
    handlers = Handlers(manager, page, icons={}, languages=(), models=())
    presence = Presence(handlers)
    keep = presence.keep_open(None)  # type: ignore[arg-type]  # no request: user "local"
    assert await anext(keep) == no_change()
    assert manager.changes.listener_count("local") == 1
    waking = asyncio.ensure_future(anext(keep))
    made = await manager.create("local", title="made elsewhere")
    assert await asyncio.wait_for(waking, 10) == {page.chats_wake: "1"}
    shown = await presence.follow("", "", None)  # type: ignore[arg-type]
    assert [value for _label, value in shown[page.session_list]["choices"]] == [made.id]
    assert await presence.follow("", "", None) == no_change()  # type: ignore[arg-type]

    waking = asyncio.ensure_future(anext(keep))
    with pytest.warns(UserWarning, match="Your account was removed"):  # (a toast on a page)
        await manager.revoke("local")
        assert await asyncio.wait_for(waking, 10) == no_change()
    with pytest.raises(StopAsyncIteration):
        await anext(keep)
    assert manager.changes.listener_count() == 0  # the tab's listener went with it
    assert "signed out" in REMOVED_NOTE


async def test_a_closed_tab_leaves_no_listener_behind(manager: SessionManager) -> None:
    page = make_page()
    handlers = Handlers(manager, page, icons={}, languages=(), models=())
    presence = Presence(handlers)
    tabs = [presence.keep_open(None) for _ in range(3)]  # type: ignore[arg-type]
    for keep in tabs:
        await anext(keep)
    assert manager.changes.listener_count("local") == 3
    for keep in tabs:
        await keep.aclose()  # Gradio closes a tab's keep-alive when the tab goes
    assert manager.changes.listener_count() == 0


async def test_a_chat_made_between_the_page_load_and_its_keep_alive_is_news(
    manager: SessionManager,
) -> None:
    """The page's load event lists the chats and its keep-alive listens to the feed; both
    start with the page. A chat made after the load began, before the keep-alive listens,
    is in neither, unless the keep-alive has the tab refresh its list."""
    page = make_page()
    handlers = Handlers(manager, page, icons={}, languages=(), models=())
    presence = Presence(handlers)
    loaded = await handlers.on_load("", "1", "", None)  # type: ignore[arg-type]
    assert loaded[page.session_list]["choices"] == []
    made = await manager.create("local", title="made before the keep-alive")
    keep = presence.keep_open(None)  # type: ignore[arg-type]
    try:
        assert await anext(keep) == no_change()
        assert await asyncio.wait_for(anext(keep), 10) == {page.chats_wake: "1"}
        shown = await presence.follow("", "", None)  # type: ignore[arg-type]
        assert [value for _label, value in shown[page.session_list]["choices"]] == [made.id]
    finally:
        await keep.aclose()


async def test_a_keep_alive_listening_before_the_load_or_after_no_change_refreshes_nothing(
    manager: SessionManager,
) -> None:
    await manager.create("local", title="made before the page")
    page = make_page()
    handlers = Handlers(manager, page, icons={}, languages=(), models=())
    presence, tab = Presence(handlers), "local\0"  # (no request: user "local", no session)
    await handlers.on_load("", "1", "", None)  # type: ignore[arg-type]
    keep = presence.keep_open(None)  # type: ignore[arg-type]
    try:
        assert await anext(keep) == no_change()
        assert not handlers.news.pending(tab)  # the load listed every chat there was
    finally:
        await keep.aclose()

    keep = presence.keep_open(None)  # type: ignore[arg-type]
    try:
        assert await anext(keep) == no_change()  # listening before the load
        await handlers.on_load("", "1", "", None)  # type: ignore[arg-type]
        assert not handlers.news.pending(tab)
        made = await manager.create("local", title="made after both")
        assert handlers.news.pending(tab)  # through the feed, as always
        assert await asyncio.wait_for(anext(keep), 10) == {page.chats_wake: "1"}
        shown = await presence.follow("", "", None)  # type: ignore[arg-type]
        assert made.id in [value for _label, value in shown[page.session_list]["choices"]]
    finally:
        await keep.aclose()


async def test_a_keep_alive_starting_after_its_user_was_removed_says_so_and_ends(
    manager: SessionManager,
) -> None:
    page = make_page()
    handlers = Handlers(manager, page, icons={}, languages=(), models=())
    await handlers.on_load("", "1", "", None)  # type: ignore[arg-type]
    await manager.revoke("local")  # before the tab's keep-alive listened: it heard nothing
    keep = Presence(handlers).keep_open(None)  # type: ignore[arg-type]
    assert await anext(keep) == no_change()
    with pytest.warns(UserWarning, match="Your account was removed"):
        assert await asyncio.wait_for(anext(keep), 10) == no_change()
    with pytest.raises(StopAsyncIteration):
        await anext(keep)
    assert manager.changes.listener_count() == 0
