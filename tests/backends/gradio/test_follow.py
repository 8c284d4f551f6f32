"""What a tab follows of changes made elsewhere (follow.py), without a browser: its own
changes are not news to it, another's are; the keep-alive wakes it for them, and `follow`
shows only the fields that changed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import gradio as gr
import pytest

from backends.gradio.follow import TabNews, as_published
from backends.gradio.handlers import tab_of
from backends.gradio.presence import Presence
from backends.gradio.sidebar import Sidebar
from backends.gradio.stream import no_change
from connectors.scripted import ScriptedModel
from schema import AutoChatSettings, AutoChatTurn, SessionUpdated
from tests.backends.gradio.kit import page_handlers

A, B, C = "alice\0tab-a", "alice\0tab-b", "carol\0tab-c"


def autochat(max_turns: int, enabled: bool = False) -> object:
    return as_published(AutoChatSettings(enabled=enabled, max_turns=max_turns))


def news_of_three_tabs() -> TabNews:
    news = TabNews()
    for tab, owner in ((A, "alice"), (B, "alice"), (C, "carol")):
        news.open(tab, owner)
    return news


def test_a_tabs_own_changes_are_not_news_to_it_but_another_tabs_are() -> None:
    news = news_of_three_tabs()
    news.saving(A, "s1", {"autochat": autochat(1)})
    news.saving(A, "s1", {"autochat": autochat(12)})  # typed on before the first came back
    for turns in (1, 12):
        for tab in (A, B):
            news.notice(tab, "s1", SessionUpdated(fields={"autochat": autochat(turns)}))
    assert not news.pending(A) and news.take(A) == set()  # its own echoes, each once
    assert news.pending(B) and news.take(B) == {"autochat"}
    news.notice(A, "s1", SessionUpdated(fields={"autochat": autochat(1)}))  # from elsewhere
    assert news.take(A) == {"autochat"}


def test_the_users_other_tabs_hear_of_chats_made_renamed_or_deleted() -> None:
    news = news_of_three_tabs()
    news.chats_changed("alice", by=A)
    assert [news.pending(tab) for tab in (A, B, C)] == [False, True, False]
    news.told(B)
    news.notice(B, "s1", SessionUpdated(fields={"title": "Renamed by the API"}))
    assert [news.pending(tab) for tab in (A, B, C)] == [True, True, False]
    assert news.take(B) == {"title"} and news.take(A) == set()  # A: only its list


async def test_a_tab_is_woken_for_a_change_made_elsewhere_and_shows_just_that(
    tmp_path: Path,
) -> None:
    page, manager, handlers = await page_handlers(
        tmp_path, ScriptedModel(default="hi"), start=False
    )
    interpreter = await manager.create("local")
    await interpreter.update(title="Watched")
    tab = tab_of(None)
    await handlers.streams.supersede(tab, 1, interpreter.id)  # the tab shows this chat
    presence = Presence(handlers)
    keep = presence.keep_open(None)  # type: ignore[arg-type]
    assert await anext(keep) == no_change()
    woken = asyncio.ensure_future(anext(keep))
    while interpreter._hub.subscriber_count == 0:  # the keep-alive listens to the chat
        await asyncio.sleep(0)
    await interpreter.update(autochat=AutoChatSettings(enabled=False, max_turns=3))
    assert await asyncio.wait_for(woken, 5) == {page.chats_wake: "1"}
    shown = await presence.follow(interpreter.id, "", None)  # type: ignore[arg-type]
    assert shown[page.max_turns] == 3 and shown[page.autochat_toggle] is False
    assert shown[page.autochat_status] == "AutoChat is off."
    assert page.system_prompt not in shown and page.rename_box not in shown  # unchanged
    assert [value for _label, value in shown[page.session_list]["choices"]] == [interpreter.id]
    handlers.closing.set()
    await keep.aclose()


async def test_a_follow_leaves_the_autochat_status_to_the_stream_while_the_chat_runs(
    tmp_path: Path,
) -> None:
    """A status taken while AutoChat runs could reach the tab after the last word of the
    stream that shows the run, and stay; so a follow says it only once the run is over."""
    page, manager, handlers = await page_handlers(
        tmp_path, ScriptedModel(default="hi"), start=False
    )
    interpreter = await manager.create("local")
    tab = tab_of(None)
    handlers.news.open(tab, "local")
    await handlers.streams.supersede(tab, 1, interpreter.id)  # the tab shows this chat
    presence = Presence(handlers)
    running = AutoChatSettings(enabled=True, max_turns=3, delay_s=60)
    async with interpreter.subscribe() as subscription:
        await interpreter.update(autochat=running)
        await interpreter.send("keep going")
        announced = False
        while not announced:  # its first automatic turn waits out the delay
            events, _more = await subscription.next_events(stop_at_idle=False)
            announced = any(isinstance(event, AutoChatTurn) for event in events)
    limits = {"autochat": as_published(running.model_copy(update={"max_turns": 4}))}
    await interpreter.update(autochat=running.model_copy(update={"max_turns": 4}))
    handlers.news.notice(tab, interpreter.id, SessionUpdated(fields=limits))
    shown = await presence.follow(interpreter.id, "", None)  # type: ignore[arg-type]
    assert shown[page.max_turns] == 4  # the change is shown
    assert page.autochat_status not in shown  # the stream of the run says how it goes
    await interpreter.update(autochat=running.model_copy(update={"enabled": False}))
    await interpreter.wait_idle()
    handlers.news.notice(tab, interpreter.id, SessionUpdated(fields=limits))
    shown = await presence.follow(interpreter.id, "", None)  # type: ignore[arg-type]
    assert str(shown[page.autochat_status]).startswith("AutoChat stopped after 0 automatic")
    await manager.close()


async def test_the_title_a_tabs_first_message_gives_is_not_news_to_that_tab(
    tmp_path: Path,
) -> None:
    """The chat's first message titles it. To the tab that sent it that title is its own
    doing: its Title box gets it through the title offer, which keeps a title the person is
    typing there meanwhile. A follow set the box whatever it held (Rename then saved the
    chat's first title over the one typed)."""
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="hi"))
    tab = tab_of(None)
    handlers.news.open(tab, "local")
    async for _update in handlers.send({page.chat_input: "plan the   trip"}, None):  # type: ignore[arg-type]
        pass
    [record] = await manager.list("local")
    interpreter = await manager.get(record.id, "local")
    await interpreter.wait_idle()
    assert interpreter.session.title == "plan the trip"
    titled = [e for e in interpreter.events_since(0) if isinstance(e, SessionUpdated)]
    assert any(e.fields.get("title") == "plan the trip" for e in titled)
    for event in titled:  # as the tab's keep-alive hears them
        handlers.news.notice(tab, interpreter.id, event)
    assert handlers.news.take(tab) == set()  # the tab's own echo, not a field to show
    other = "local\0another-tab"  # a tab of the same person showing the chat: news
    handlers.news.open(other, "local")
    for event in titled:
        handlers.news.notice(other, interpreter.id, event)
    assert handlers.news.take(other) == {"title"}
    await manager.close()


async def test_a_catch_up_leaves_the_title_a_tabs_first_message_gave_to_its_box(
    tmp_path: Path,
) -> None:
    """A keep-alive started again has the tab catch up: each box whose value differs from
    what the tab last got (its base) is set. The base of a chat made by a send said its
    title was empty, so a catch-up after the first message set the Title box to the first
    title over one the person was typing (Rename then saved the first title: the rename
    tests' flake). The send's base now holds the title its message gives the chat."""
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="hi"))
    tab = tab_of(None)
    handlers.news.open(tab, "local")
    base = ""
    async for update in handlers.send({page.chat_input: "plan the   trip"}, None):  # type: ignore[arg-type]
        base = str(update.get(page.form_base, base))
    [record] = await manager.list("local")
    interpreter = await manager.get(record.id, "local")
    await interpreter.wait_idle()
    assert interpreter.session.title == "plan the trip"
    handlers.news.missed(tab)  # to catch up, as a keep-alive started again has it
    shown = await Presence(handlers).follow(interpreter.id, "", None, base)  # type: ignore[arg-type]
    assert page.rename_box not in shown  # the box keeps what the person typed there
    await interpreter.update(title="Renamed in another tab")  # a change made elsewhere
    handlers.news.missed(tab)
    shown = await Presence(handlers).follow(interpreter.id, "", None, base)  # type: ignore[arg-type]
    assert shown[page.rename_box] == "Renamed in another tab"
    await manager.close()


async def test_a_catch_up_after_a_rename_in_the_tab_leaves_its_title_box(tmp_path: Path) -> None:
    """A rename saved in the tab is in its base: a keep-alive started again afterwards
    leaves the Title box to the person (it set the box to the saved title again, over a
    title typed since)."""
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="hi"))
    interpreter = await manager.create("local", title="The first title")
    tab = tab_of(None)
    handlers.news.open(tab, "local")
    await handlers.streams.supersede(tab, 1, interpreter.id)  # the tab shows this chat
    base = str(handlers.opened(tab, interpreter)[page.form_base])
    renamed = await Sidebar(handlers).rename(interpreter.id, " Renamed here ", "", None, base)  # type: ignore[arg-type]
    assert interpreter.session.title == "Renamed here"
    handlers.news.missed(tab)
    shown = await Presence(handlers).follow(interpreter.id, "", None, renamed[page.form_base])  # type: ignore[arg-type]
    assert page.rename_box not in shown
    handlers.news.missed(tab)
    shown = await Presence(handlers).follow(interpreter.id, "", None, base)  # type: ignore[arg-type]
    assert shown[page.rename_box] == "Renamed here"  # the base before the rename: it moved
    await manager.close()


async def test_a_chat_deleted_elsewhere_leaves_the_tab_that_shows_it_for_a_new_chat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tab's list dropped the chat, and its view and boxes went on showing it."""
    said: list[str] = []
    monkeypatch.setattr(gr, "Warning", lambda message, *_a, **_k: said.append(message))
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="hi"))
    kept = await manager.create("local", title="A chat that stays")
    gone = await manager.create("local", title="A chat deleted elsewhere")
    tab = tab_of(None)
    handlers.news.open(tab, "local")
    await handlers.streams.supersede(tab, 1, gone.id)  # the tab shows it
    base = str(handlers.opened(tab, gone)[page.form_base])
    await manager.delete(gone.id, "local")
    handlers.news.missed(tab)  # (the tab has news: the feed's is the keep-alive's)
    shown = await Presence(handlers).follow(gone.id, "chat", None, base)  # type: ignore[arg-type]
    await manager.close()
    assert said == ["This chat was deleted in another tab or window: this is a new chat."]
    assert shown[page.session_id] == ""
    assert shown[page.chatbot] == []
    assert shown[page.rename_box] == ""
    assert page.search not in shown  # the tab's search stays, and its list is that search
    listed = shown[page.session_list]
    assert listed["value"] is None
    assert [value for _label, value in listed["choices"]] == [kept.id]
    assert handlers.streams.shown(tab) == ""
