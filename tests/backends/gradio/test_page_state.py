"""The page's state without a browser: what the AutoChat line and the Stop badge say, the
memory panel's wording, the form's limit checks, and a tab's streams (ended, woken, queued
messages shown, a long chat's slower pace)."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest

from backends.gradio.form import Form
from backends.gradio.handlers import Handlers, tab_of
from backends.gradio.panels import (
    MemoryInfo,
    PanelState,
    badge_html,
    memory_markdown,
)
from backends.gradio.presence import Presence
from backends.gradio.stream import QUEUED_MARK, PageView, no_change, stream_session
from backends.gradio.tabs import TabStreams
from connectors.scripted import ScriptedModel
from gui_agent.exceptions import InvalidRequest
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.quick import create_interpreter
from gui_agent.store import MemoryStore
from gui_agent.wording import AUTOCHAT_STILL_ON
from schema import (
    AutoChatSettings,
    AutoChatStopped,
    AutoChatStopReason,
    AutoChatTurn,
    InterpreterState,
    Message,
    Role,
    SessionUpdated,
    StateChanged,
)
from tests.backends.gradio.kit import make_page

RUNNING, STOP = InterpreterState.RUNNING, InterpreterState.STOP


def state(to: InterpreterState) -> StateChanged:
    return StateChanged(from_state=InterpreterState.INIT, to_state=to)


def autochat(enabled: bool) -> SessionUpdated:
    return SessionUpdated(fields={"autochat": AutoChatSettings(enabled=enabled).model_dump()})


def test_the_autochat_line_follows_a_run_from_switch_to_stop() -> None:
    panels = PanelState()
    assert panels.autochat == "AutoChat is off."
    panels.apply(autochat(True))
    assert panels.autochat.startswith("AutoChat is on: after your next message")
    panels.apply(state(RUNNING))  # the person's message
    assert panels.autochat.startswith("AutoChat is on: after this reply")
    panels.apply(state(STOP))
    panels.apply(AutoChatTurn(turn=1, max_turns=5, remaining=4))
    assert panels.autochat == "AutoChat: automatic turn 1 of 5 starts shortly."  # the delay
    assert panels.stoppable  # between turns: STOP, yet there is AutoChat to stop
    panels.apply(state(RUNNING))
    assert panels.autochat == "AutoChat running: automatic turn 1 of 5, 4 remaining."
    panels.apply(state(STOP))
    reached = "reached 1 automatic turn"
    panels.apply(AutoChatStopped(reason=AutoChatStopReason.MAX_TURNS, turns=1, detail=reached))
    assert panels.autochat == (  # (still ticked: what a next message does is said)
        "AutoChat stopped after 1 automatic turn: it reached its limit of automatic turns. "
        "It is still switched on: your next message starts it again."
    )
    assert not panels.stoppable
    panels.apply(autochat(False))  # unticked after it stopped
    assert panels.autochat == "AutoChat is off."


def test_autochat_stopped_before_its_announced_turn_ran_counts_only_turns_that_ran() -> None:
    panels = PanelState(state=STOP)
    panels.apply(autochat(True))
    panels.apply(AutoChatTurn(turn=1, max_turns=5, remaining=4))
    # the session counts only turns that ran: this one was stopped during its delay
    panels.apply(AutoChatStopped(reason=AutoChatStopReason.STOPPED, turns=0))
    assert (
        panels.autochat
        == f"AutoChat stopped after 0 automatic turns: it was stopped. {AUTOCHAT_STILL_ON}"
    )


def test_unticking_mid_run_keeps_saying_it_runs_until_it_stops() -> None:
    panels = PanelState(state=STOP)
    panels.apply(autochat(True))
    panels.apply(AutoChatTurn(turn=2, max_turns=5, remaining=3))
    panels.apply(state(RUNNING))
    panels.apply(autochat(False))  # it stops after the current turn
    assert panels.autochat.startswith("AutoChat running: automatic turn 2 of 5")
    panels.apply(AutoChatStopped(reason=AutoChatStopReason.DISABLED, turns=2))
    assert panels.autochat == "AutoChat stopped after 2 automatic turns: it was switched off."


@pytest.mark.parametrize(
    ("state_", "stoppable", "expected"),
    [
        (InterpreterState.RUNNING, None, "true"),
        (InterpreterState.WAITING, None, "true"),
        (InterpreterState.STOP, None, "false"),
        (InterpreterState.STOP, True, "true"),
        (InterpreterState.INIT, None, "false"),
    ],
)
def test_the_badge_tells_the_page_whether_stop_has_something_to_stop(
    state_: InterpreterState, stoppable: bool | None, expected: str
) -> None:
    html = badge_html(state_, stoppable=stoppable)
    assert f'data-stoppable="{expected}"' in html
    assert f'data-state="{state_.value}"' in html


def test_the_memory_panel_counts_in_good_english() -> None:
    one = memory_markdown(MemoryInfo(("u1",), 1, dropped=1), lambda _id: ("user", "hi"))
    assert "1 message, 1 token." in one and "1 older message slid out" in one
    two = memory_markdown(MemoryInfo(("u1", "a1"), 1234), lambda _id: None)
    assert "2 messages, 1,234 tokens." in two


async def test_a_limit_out_of_range_is_named_as_the_page_labels_it() -> None:
    page = make_page()
    cases = {
        page.max_turns: (0, "Max automatic turns must be at least 1", "max_turns"),
        page.delay: (-1, "Delay between turns must be at least 0", "delay_s"),
        page.token_budget: (-5, "Token budget must be 0 (none) or more", "token_budget"),
        page.time_budget: (-1, "Time budget must be 0 (none) or more", "time_budget_s"),
    }
    previous = AutoChatSettings(max_turns=7, delay_s=2, token_budget=900, time_budget_s=60)
    typed = {page.max_turns: 3, page.delay: 1, page.token_budget: 400, page.time_budget: 30}
    for component, (value, message, name) in cases.items():
        form = Form.read(page, {**typed, component: value})
        with pytest.raises(InvalidRequest, match=re.escape(message)):
            form.autochat_settings()
        kept, problem = form.autochat_or(previous, enabled=True)
        assert problem == message
        # the box that is wrong keeps its previous value; the others are taken as typed
        expected = AutoChatSettings(
            enabled=True, max_turns=3, delay_s=1, token_budget=400, time_budget_s=30
        )
        assert kept == expected.model_copy(update={name: getattr(previous, name)})
    assert Form.read(page, {page.max_turns: 1001}).autochat_or(AutoChatSettings())[1] == (
        "Max automatic turns must be at most 1,000"
    )


async def test_a_queued_message_shows_marked_until_the_turn_takes_it_up(tmp_path: Path) -> None:
    page = make_page()
    interpreter = create_interpreter(
        ScriptedModel(["one two three " * 20, "second answer"], delay_s=0.005), workdir=tmp_path
    )
    streams = TabStreams()
    updates: list[dict[Any, Any]] = []
    with streams.watch("tab", interpreter.id) as watch:
        stream = stream_session(
            interpreter,
            lambda: PageView.of(page, interpreter, icons={}),
            action=lambda: interpreter.send("first"),
            watch=watch,
        )
        queued = False
        async for update in stream:
            updates.append(update)
            replying = any("one two" in t for t in _texts(update.get(page.chatbot, [])))
            if replying and not queued:  # mid-step: the message waits for the step's end
                assert streams.showing("tab", interpreter.id)
                await interpreter.send("queued one")
                streams.wake(interpreter.id)
                queued = True
    shown = [_texts(u[page.chatbot]) for u in updates if page.chatbot in u]
    marked = [texts for texts in shown if any(QUEUED_MARK in t for t in texts)]
    assert marked, "the queued message is shown (marked) before its turn"
    assert any(t.startswith("queued one") for t in marked[0])
    final = shown[-1]
    assert not any(QUEUED_MARK in t for t in final)
    assert any("second answer" in t for t in final)
    assert not streams.showing("tab", interpreter.id)


async def test_ending_a_tabs_streams_stops_their_updates_and_waits_for_them(
    tmp_path: Path,
) -> None:
    page = make_page()
    interpreter = create_interpreter(ScriptedModel(["slow " * 400], delay_s=0.01), workdir=tmp_path)
    streams = TabStreams()
    seen = 0
    ended_at: int | None = None
    after: list[dict[Any, Any]] = []

    async def consume() -> None:
        nonlocal seen
        with streams.watch("tab", interpreter.id, 3) as watch:
            async for update in stream_session(
                interpreter,
                lambda: PageView.of(page, interpreter, icons={}),
                action=lambda: interpreter.send("go"),
                watch=watch,
            ):
                if ended_at is not None:  # one "no change" (what Gradio repeats at the end)
                    assert update == no_change(), "no update after the stream was ended"
                    after.append(update)
                    continue
                seen += 1

    task = asyncio.ensure_future(consume())
    while seen < 3:
        await asyncio.sleep(0.01)
    ended_at = seen
    await streams.supersede("tab", 7, "another chat")
    assert task.done()  # `supersede` returned only once the stream had finished
    await task
    assert after == [no_change()]
    assert streams.shown("tab") == "another chat"
    assert interpreter.busy  # ending the view does not stop the session
    assert interpreter._hub.subscriber_count == 0
    await interpreter.stop()
    await streams.supersede("nobody", 0, "")  # nothing to end: returns at once
    assert streams.shown("nobody") is None  # (no ticket: nothing remembered)


async def test_the_keep_alive_event_ends_when_the_server_closes(tmp_path: Path) -> None:
    page = make_page()
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(default="hi")),
        store=MemoryStore(),
        workspace_root=tmp_path,
    )
    closing = asyncio.Event()
    handlers = Handlers(manager, page, icons={}, languages=(), models=(), closing=closing)
    keep = Presence(handlers).keep_open(None)  # type: ignore[arg-type]
    assert await anext(keep) == no_change()
    waiting = asyncio.ensure_future(anext(keep))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    closing.set()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(waiting, 1.0)


async def _chatbot_updates(page: Any, interpreter: Any) -> tuple[int, float]:
    """How many chatbot updates one turn streams to a tab, and over how many seconds."""
    start, count = time.monotonic(), 0
    async for update in stream_session(
        interpreter,
        lambda: PageView.of(page, interpreter, icons={}),
        action=lambda: interpreter.send("go on"),
    ):
        count += page.chatbot in update
    return count, time.monotonic() - start


async def test_a_long_chat_streams_its_reply_in_fewer_updates(tmp_path: Path) -> None:
    """Gradio's page redoes work for every message on every update: a chat of 400 messages
    is updated at most every 0.5 s (a structural event, 0.4 s after the last update), not
    ten times a second."""
    page = make_page()
    reply = "word " * 40  # 40 pieces, 20 ms apart
    short = create_interpreter(ScriptedModel([reply], delay_s=0.02), workdir=tmp_path / "s")
    long = create_interpreter(ScriptedModel([reply], delay_s=0.02), workdir=tmp_path / "l")
    for number in range(200):
        long.session.history.append(Message(role=Role.USER, content=f"question {number}"))
        long.session.history.append(Message(role=Role.ASSISTANT, content=f"answer {number}"))
    short_count, _ = await _chatbot_updates(page, short)
    long_count, long_s = await _chatbot_updates(page, long)
    # The view as it was, the first event's update (nothing shown before it), then at most
    # one per 0.4 s, and the last (the reply filed, shown at once).
    assert long_count <= long_s / 0.4 + 3, (long_count, long_s)
    assert short_count >= long_count, (short_count, long_count)


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m["content"][0]["text"]) for m in messages]


async def test_only_streams_triggered_before_a_view_change_are_ended() -> None:
    streams = TabStreams()
    with (
        streams.watch("tab", "old chat", 4) as older,
        streams.watch("tab", "new chat", 9) as newer,  # e.g. a send right after New chat
        streams.watch("other tab", "old chat", 1) as elsewhere,
    ):
        ending = asyncio.ensure_future(streams.supersede("tab", 6, "picked chat"))
        await asyncio.sleep(0)
        assert older.ended and not newer.ended and not elsewhere.ended
        assert not ending.done()  # it waits for the older stream to finish
    await asyncio.wait_for(ending, 1.0)
    with streams.watch("tab", "slow to start", 5) as late:
        assert late.ended  # triggered before the view change, registered after it
    assert streams.overtaken("tab", 5) and not streams.overtaken("tab", 6)
    assert streams.shown("tab") == "picked chat"
    with streams.watch("tab", "after", 10) as after:
        assert not after.ended
        assert streams.showing("tab", "after") and not streams.showing("tab", "slow to start")


async def test_a_tab_opened_while_autochat_waits_counts_only_turns_that_ran(
    tmp_path: Path,
) -> None:
    """A tab that catches up between turns (opened, reloaded) knows the announced turn has
    not run: Stop then says the same number in the chat as on the status line."""
    page = make_page()
    auto = AutoChatSettings(enabled=True, max_turns=3, delay_s=30)
    interpreter = create_interpreter(ScriptedModel(default="done"), workdir=tmp_path)
    await interpreter.update(autochat=auto)
    async with interpreter.subscribe() as subscription:
        await interpreter.send("the goal")
        announced = False
        while not announced:
            events, _more = await subscription.next_events(stop_at_idle=False)
            announced = any(isinstance(event, AutoChatTurn) for event in events)
    updates: list[dict[Any, Any]] = []
    stream = stream_session(interpreter, lambda: PageView.of(page, interpreter, icons={}))
    async for update in stream:
        updates.append(update)
        if len(updates) == 1:  # the tab shows the chat, waiting for turn 1: Stop now
            assert interpreter.busy and interpreter.autochat_active
            await interpreter.stop()
    last = updates[-1]
    notes = [t for t in _texts(last[page.chatbot]) if "AutoChat stopped" in t]
    assert notes == ["_AutoChat stopped after 0 automatic turns: stopped by the user_"]
    assert last[page.autochat_status].startswith("AutoChat stopped after 0 automatic turns")


def test_the_autochat_line_shows_a_limit_edited_while_a_turn_runs() -> None:
    panels = PanelState(state=STOP)
    panels.apply(autochat(True))
    panels.apply(AutoChatTurn(turn=1, max_turns=5, remaining=4))
    panels.apply(state(RUNNING))
    edited = AutoChatSettings(enabled=True, max_turns=2).model_dump(mode="json")
    panels.apply(SessionUpdated(fields={"autochat": edited}))
    assert panels.autochat == "AutoChat running: automatic turn 1 of 2, 1 remaining."
    panels.apply(state(STOP))
    panels.apply(AutoChatTurn(turn=2, max_turns=2, remaining=0))  # the session's word counts
    assert panels.autochat == "AutoChat: automatic turn 2 of 2 starts shortly."


async def test_the_keep_alive_event_wakes_a_tab_whose_chat_moves_on_elsewhere(
    tmp_path: Path,
) -> None:
    page = make_page()
    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(default="hi")),
        store=MemoryStore(),
        workspace_root=tmp_path,
    )
    handlers = Handlers(manager, page, icons={}, languages=(), models=())
    interpreter = await manager.create("local")
    await interpreter.update(title="Watched")  # (a first message's title is news: follow.py)
    tab = tab_of(None)
    await handlers.streams.supersede(tab, 1, interpreter.id)  # the tab shows this chat
    keep = Presence(handlers).keep_open(None)  # type: ignore[arg-type]
    assert await anext(keep) == no_change()
    woken = asyncio.ensure_future(anext(keep))
    while interpreter._hub.subscriber_count == 0:  # the keep-alive listens to the chat
        await asyncio.sleep(0)
    with handlers.streams.watch(tab, interpreter.id, 2):  # the tab's own send, shown live
        await interpreter.send("from this tab")
        await interpreter.wait_idle()
        for _ in range(10):
            await asyncio.sleep(0)
    # Its chats list is woken (the chat worked, then stopped: SessionManager.activity), its
    # view is not: the tab's own stream shows the chat.
    while woken.done():
        assert set(woken.result()) == {page.chats_wake}
        woken = asyncio.ensure_future(anext(keep))
        for _ in range(10):
            await asyncio.sleep(0)
    await interpreter.send("from another tab")  # no stream of this tab shows it
    async with asyncio.timeout(5):
        while page.tab_wake not in (wake := await woken):
            assert set(wake) == {page.chats_wake}  # (the list: the chat works again)
            woken = asyncio.ensure_future(anext(keep))
    handlers.closing.set()
    await keep.aclose()
    await interpreter.wait_idle()


def test_a_summary_that_ends_its_own_sentence_gets_no_second_full_stop() -> None:
    panels = PanelState(state=STOP)
    panels.apply(autochat(True))
    panels.apply(AutoChatStopped(reason=AutoChatStopReason.TASK_COMPLETE, turns=1, detail="Done."))
    assert panels.autochat == (
        f"AutoChat stopped after 1 automatic turn: the task is done: Done. {AUTOCHAT_STILL_ON}"
    )
    panels.apply(autochat(False))
    assert panels.autochat == "AutoChat is off."
