"""The chats list says, in words, which chats work now ("• working") or wait for the
person's approval ("• needs approval"), and the user's open tabs hear of each such change
(the session manager's `activity` feed): the list showed no sign of either. Driven as the
browser's events would run them (no browser)."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

from backends.gradio.handlers import Handlers, tab_of
from backends.gradio.presence import Presence
from connectors.function import FunctionInfo, FunctionModel
from connectors.scripted import call
from gui_agent.changes import ChatChange, ChatChangeKind
from gui_agent.interpreter import Interpreter
from schema import ApprovalDecision, InterpreterState, Message, Role
from tests.backends.gradio.kit import page_handlers


async def _labels(handlers: Handlers) -> list[str]:
    return [label for label, _id in await handlers.session_choices("local")]


class Heard:
    """The activity changes the feed announced, and a wait for the next one."""

    def __init__(self) -> None:
        self.changes: list[ChatChange] = []
        self._next = asyncio.Event()

    def __call__(self, change: ChatChange) -> None:
        self.changes.append(change)
        self._next.set()

    async def until(self, interpreter: Interpreter, state: InterpreterState) -> None:
        async with asyncio.timeout(10):
            while interpreter.state is not state:
                self._next.clear()
                await self._next.wait()


async def test_the_list_says_which_chat_works_and_which_waits_for_approval(
    tmp_path: Path,
) -> None:
    gate = asyncio.Event()

    async def model(messages: list[Message], info: FunctionInfo) -> Any:
        last = messages[-1]
        if last.role is Role.USER and last.content == "write":
            return call("write_file", path="a.txt", content="x")
        if last.role is Role.USER:
            await gate.wait()  # a reply still being written
        return "done"

    _page, manager, handlers = await page_handlers(tmp_path, FunctionModel(model))
    heard = Heard()
    try:
        manager.activity.listen("local", heard)
        slow = await manager.create("local", title="Slow one")
        asking = await manager.create("local", title="Asking one")
        idle = await manager.create("local", title="Idle one")
        assert not any("•" in label for label in await _labels(handlers))

        await slow.send("think")
        await heard.until(slow, InterpreterState.RUNNING)
        await asking.send("write")
        await heard.until(asking, InterpreterState.WAITING)
        labels = {label.split(" · ")[0]: label for label in await _labels(handlers)}
        assert labels["Slow one"].endswith(" • working")
        assert labels["Asking one"].endswith(" • needs approval")
        assert "•" not in labels["Idle one"]
        assert {c.session_id for c in heard.changes} == {slow.id, asking.id}
        assert {c.kind for c in heard.changes} == {ChatChangeKind.ACTIVITY}

        (approval,) = asking.pending_approvals
        asking.approve(approval.approval_id, ApprovalDecision.ALLOW_ONCE)
        gate.set()
        await asyncio.wait_for(slow.wait_idle(), 10)
        await asyncio.wait_for(asking.wait_idle(), 10)
        assert not any("•" in label for label in await _labels(handlers))
        assert idle.id not in {c.session_id for c in heard.changes}
    finally:
        gate.set()
        await manager.close()


async def test_a_chat_that_starts_working_is_news_to_every_open_tab_of_its_user(
    tmp_path: Path,
) -> None:
    """The tab that runs the chat too: its list shows the sign as well."""
    _page, manager, handlers = await page_handlers(tmp_path)
    tab = tab_of(None)
    try:
        handlers.news.open(tab, "local")
        listening = manager.activity.listen("local", functools.partial(handlers.news.changed, tab))
        with listening:
            chat = await manager.create("local", origin=tab)
            assert not handlers.news.has_news(tab, showing=chat.id)  # (its own new chat)
            await chat.send("hello")
            await asyncio.wait_for(chat.wait_idle(), 10)
            assert handlers.news.has_news(tab, showing=chat.id)
            assert handlers.news.take_list(tab, showing=chat.id)
    finally:
        await manager.close()


async def test_a_tab_keep_alive_listens_to_the_activity_of_its_users_chats(
    tmp_path: Path,
) -> None:
    """The keep-alive registers the tab for the activity feed while it runs (presence.py)."""
    _page, manager, handlers = await page_handlers(tmp_path)
    presence = Presence(handlers, keep_open_s=0.05)
    keep = presence.keep_open(None)  # type: ignore[arg-type]
    try:
        await anext(keep)
        assert manager.activity.listener_count("local") == 1
    finally:
        await keep.aclose()
        await manager.close()
    assert manager.activity.listener_count("local") == 0


async def test_another_users_chat_at_work_is_neither_news_nor_listed(tmp_path: Path) -> None:
    """Bob's chat runs: nothing of it reaches Local's tab, whose list stays as it was."""
    gate = asyncio.Event()

    async def model(messages: list[Message], info: FunctionInfo) -> Any:
        await gate.wait()
        return "done"

    _page, manager, handlers = await page_handlers(tmp_path, FunctionModel(model))
    tab = tab_of(None)
    heard, bobs = Heard(), Heard()
    try:
        handlers.news.open(tab, "local")
        mine = await manager.create("local", title="Mine")
        manager.activity.listen("local", heard)
        manager.activity.listen("bob", bobs)
        with manager.activity.listen("local", functools.partial(handlers.news.changed, tab)):
            theirs = await manager.create("bob", title="Theirs")
            await theirs.send("think")
            await bobs.until(theirs, InterpreterState.RUNNING)
            assert not handlers.news.has_news(tab, showing=mine.id)
            assert heard.changes == [] and manager.activity.announced("local") == 0
            assert [label.split(" · ")[0] for label in await _labels(handlers)] == ["Mine"]
            assert manager.working_state(theirs.id) is InterpreterState.RUNNING
            gate.set()
            await asyncio.wait_for(theirs.wait_idle(), 10)
            assert not handlers.news.has_news(tab, showing=mine.id)
        assert manager.working_state(theirs.id) is None
        assert {c.session_id for c in bobs.changes} == {theirs.id}
    finally:
        gate.set()
        await manager.close()


async def test_a_keep_alive_superseded_by_the_tabs_next_one_stops_listening(
    tmp_path: Path,
) -> None:
    """A reload (or a keep-alive started again) supersedes the tab's keep-alive: the old one
    ends and lets go of the feed; the new one listens alone, until it ends too."""
    _page, manager, handlers = await page_handlers(tmp_path)
    presence = Presence(handlers)
    old = presence.keep_open(None)  # type: ignore[arg-type]
    new = presence.keep_open(None)  # type: ignore[arg-type]
    try:
        await anext(old)
        await anext(new)
        assert manager.activity.listener_count("local") == 2
        async with asyncio.timeout(10):
            async for _update in old:  # (woken by the new one: it ends)
                pass
        assert manager.activity.listener_count("local") == 1
        assert manager.changes.listener_count("local") == 1
    finally:
        await new.aclose()
        await manager.close()
    assert manager.activity.listener_count() == 0 and manager.changes.listener_count() == 0
