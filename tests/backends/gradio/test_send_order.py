"""A tab's messages are handled in the order the person sent them, whatever order their
requests come in (send_order.py; no browser: the handlers are called in the order a slow
link delivers them)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from backends.gradio import stream as stream_module
from backends.gradio.handlers import Handlers
from backends.gradio.layout import Page
from backends.gradio.send_order import SendOrder
from backends.gradio.stream import no_change
from backends.gradio.tabs import send_number_of, ticket_of
from gui_agent.manager import SessionManager
from tests.backends.gradio.kit import page_handlers


async def _collect(updates: AsyncIterator[dict[Any, Any]]) -> list[dict[Any, Any]]:
    return [update async for update in updates]


async def _started(tmp_path: Path) -> tuple[Page, SessionManager, Handlers]:
    """A page's handlers on a started manager whose model answers "the reply"."""
    return await page_handlers(tmp_path)


@pytest.mark.parametrize(
    ("ticket", "event", "send"),
    [("17:3", 17, 3), ("17", 17, 0), ("", 0, 0), (None, 0, 0), ("x:y", 0, 0), ("4:-2", 4, 0)],
)
def test_a_sends_ticket_carries_the_event_and_the_send_number(
    ticket: object, event: int, send: int
) -> None:
    assert ticket_of(ticket) == event
    assert send_number_of(ticket) == send


async def test_a_send_that_comes_before_the_one_made_before_it_waits_for_it() -> None:
    order = SendOrder(wait_s=5)
    handled: list[int] = []

    async def send(number: int) -> None:
        await order.in_turn("tab", number)
        handled.append(number)
        order.handed("tab", number)

    order.handed("tab", 1)
    third = asyncio.ensure_future(send(3))  # comes first
    second = asyncio.ensure_future(send(2))
    await asyncio.wait_for(asyncio.gather(third, second), 2)
    assert handled == [2, 3]
    await send(0)  # unnumbered (API callers): never waits
    await send(1)  # a tab's first
    assert handled == [2, 3, 0, 1]


async def test_a_send_lost_on_the_way_is_waited_for_only_so_long() -> None:
    order = SendOrder(wait_s=0.2)
    started = time.monotonic()
    await order.in_turn("tab", 2)  # send 1 never comes
    assert 0.15 < time.monotonic() - started < 2
    order.handed("tab", 2)
    await asyncio.wait_for(order.in_turn("tab", 3), 0.1)  # and the next is not held by it
    await asyncio.wait_for(order.in_turn("another tab", 1), 0.1)  # nor another tab's


async def test_messages_sent_in_a_row_whose_requests_come_the_other_way_round_stay_in_order(
    tmp_path: Path,
) -> None:
    page, manager, handlers = await _started(tmp_path)
    try:
        opening = {page.chat_input: "the first", page.session_id: "", page.ticket: "1:1"}
        await _collect(handlers.send(opening, None))  # type: ignore[arg-type]
        (chat,) = await manager.list("local")
        interpreter = await manager.get(chat.id, owner="local")
        await interpreter.wait_idle()

        def message(text: str, ticket: str) -> dict[Any, Any]:
            return {page.chat_input: text, page.session_id: chat.id, page.ticket: ticket}

        later = asyncio.ensure_future(_collect(handlers.send(message("third", "5:3"), None)))  # type: ignore[arg-type]
        for _ in range(20):
            await asyncio.sleep(0)
        assert not later.done()  # it waits for the send made before it
        await _collect(handlers.send(message("second", "4:2"), None))  # type: ignore[arg-type]
        await asyncio.wait_for(later, 10)
        await interpreter.wait_idle()
        said = [m.content for m in interpreter.session.history if m.content != "the reply"]
        assert said == ["the first", "second", "third"]
    finally:
        await manager.close()


async def test_a_turn_started_as_the_tabs_stream_ends_is_shown_by_that_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message sent as the last turn ended: its send saw the tab's stream showing the chat
    and left the showing to it, but that stream had taken its last events. It must show the
    turn the message started."""
    page, manager, handlers = await _started(tmp_path)
    refresh = stream_module.PageView.refresh_memory
    last_taken = asyncio.Event()

    def noted(view: stream_module.PageView, interpreter: Any) -> None:
        refresh(view, interpreter)  # (done once the stream has taken its last events)
        last_taken.set()  # the update yielded next is the stream's last

    monkeypatch.setattr(stream_module.PageView, "refresh_memory", noted)
    try:
        opening = {page.chat_input: "the first", page.session_id: "", page.ticket: "1"}
        stream = handlers.send(opening, None)  # type: ignore[arg-type]
        updates = [await anext(stream)]
        while not last_taken.is_set():
            updates.append(await anext(stream))
        # While Gradio sends that last update, a message starts the next turn, and its
        # send leaves the showing to this stream (it still shows the chat).
        (chat,) = await manager.list("local")
        interpreter = await manager.get(chat.id, owner="local")
        await interpreter.send("the second")
        await interpreter.wait_idle()
        updates += await asyncio.wait_for(_collect(stream), 10)
        shown = [u for u in updates if page.chatbot in u]
        texts = [str(m["content"][0]["text"]) for m in shown[-1][page.chatbot]]
        assert any("the second" in text for text in texts), texts
    finally:
        await manager.close()


async def test_a_tabs_stream_ends_on_an_update_that_changes_nothing(tmp_path: Path) -> None:
    """Gradio's last message of a stream repeats its last update, and can come after the
    updates of the tab's next send (a message sent as the turn ended): a real view there
    would cover the next turn's (the reply never showed, 1 run in 11-22 under load)."""
    page, manager, handlers = await _started(tmp_path)
    try:
        opening = {page.chat_input: "the first", page.session_id: "", page.ticket: "1:1"}
        first = await _collect(handlers.send(opening, None))  # type: ignore[arg-type]
        (chat,) = await manager.list("local")
        interpreter = await manager.get(chat.id, owner="local")
        await interpreter.wait_idle()
        nxt = {page.chat_input: "the next", page.session_id: chat.id, page.ticket: "2:2"}
        second = await _collect(handlers.send(nxt, None))  # type: ignore[arg-type]
        for updates in (first, second):
            assert any(page.chatbot in u for u in updates)  # the turn was shown
            assert updates[-1] == no_change()  # and the stream ended on nothing
        said = [m.content for m in interpreter.session.history]
        assert said == ["the first", "the reply", "the next", "the reply"]
    finally:
        await manager.close()
