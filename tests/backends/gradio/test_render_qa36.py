"""What the chat page says, without a browser (QA pass 36): the state badge in plain words, a
message a Stop left unanswered apart from the next one, an empty reply and an error as a
person reads them (live as after a reload), what a message sent while the agent is busy
waits for, and a fraction typed as a count of AutoChat turns."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any, cast

import gradio as gr
import pytest

from backends.gradio.form import Form
from backends.gradio.handlers import Handlers
from backends.gradio.panels import BADGE_WORDS, BETWEEN_TURNS, PanelState, badge_html
from backends.gradio.renderer import ChatView
from backends.gradio.sending import (
    ANSWERED_NOW_IN_AUTOCHAT,
    QUEUED_BEHIND_APPROVAL,
    QUEUED_NOTE,
)
from backends.gradio.stream import QUEUED_BEHIND_APPROVAL_MARK, QUEUED_MARK, PageView
from connectors.scripted import ScriptedModel, call
from gui_agent.manager import SessionManager
from gui_agent.turn_end import UNANSWERED
from schema import (
    AgentName,
    ApprovalRequested,
    AutoChatSettings,
    AutoChatTurn,
    ErrorEvent,
    Event,
    InterpreterState,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    Role,
    TextDelta,
    ToolCall,
)
from tests.backends.gradio.kit import make_page, page_handlers
from tests.gui_agent.helpers import next_event

# -- the state badge ---------------------------------------------------------------------------


@pytest.mark.parametrize("state", list(InterpreterState))
def test_the_badge_says_the_state_in_plain_words(state: InterpreterState) -> None:
    """INIT, RUNNING, WAITING and STOP are the interpreter's names: STOP beside the red Stop
    button read as a command. The badge says what a person understands; the name stays in
    `data-state` and the class for code and styles."""
    html = badge_html(state)
    shown = html.split(">", 1)[1].removesuffix("</span>")
    assert shown == BADGE_WORDS[state] == _PLAIN[state]
    assert f'data-state="{state.value}"' in html
    assert f"ga-badge-{state.value.lower()}" in html


def test_between_two_autochat_turns_the_badge_says_a_turn_is_coming() -> None:
    """AutoChat waiting out its delay is STOP, yet Stoppable: "Your turn" read as if the
    agent were done."""
    html = badge_html(InterpreterState.STOP, stoppable=True)
    assert html.split(">", 1)[1].removesuffix("</span>") == BETWEEN_TURNS
    assert 'data-state="STOP"' in html and 'data-stoppable="true"' in html
    assert BADGE_WORDS[InterpreterState.STOP] in badge_html(InterpreterState.STOP)


_PLAIN = {
    InterpreterState.INIT: "Ready",
    InterpreterState.RUNNING: "Working…",
    InterpreterState.WAITING: "Waiting for your approval",
    InterpreterState.STOP: "Your turn",
}


# -- a message a Stop left unanswered ----------------------------------------------------------


def _bubbles(messages: list[dict[str, Any]]) -> list[list[str]]:
    """The chat's bubbles as Gradio draws them (`group_consecutive_messages`): consecutive
    messages of one role share a bubble. Each bubble as its messages' texts."""
    bubbles: list[list[str]] = []
    role = None
    for message in messages:
        text = str(message["content"][0]["text"])
        if message["role"] == role:
            bubbles[-1].append(text)
        else:
            bubbles.append([text])
            role = message["role"]
    return bubbles


def _stopped_history() -> list[Message]:
    first = Message(id="u1", role=Role.USER, content="write a file")
    reply = Message(
        id="a1",
        role=Role.ASSISTANT,
        agent=AgentName.AGENT_EXECUTOR,
        content="Let me do that.",
        status=MessageStatus.INTERRUPTED,
    )
    waiting = Message(
        id="u2",
        role=Role.USER,
        content="second message while waiting",
        metadata={UNANSWERED: True, "display_only": True},
    )
    return [first, reply, waiting]


def test_a_message_sent_after_a_stop_has_a_bubble_of_its_own() -> None:
    """The note that a message was not answered is not inside that message's bubble: the
    next message of the person's, which Gradio groups with the one before it, read as part
    of the unanswered one, and the note as applying to it too."""
    history = _stopped_history()
    after = Message(id="u3", role=Role.USER, content="third message after stop")
    live = ChatView.from_history(history[:2])
    live.apply(MessageCompleted(message=history[2]))  # filed unanswered by the Stop
    live.apply(MessageCompleted(message=after))
    rebuilt = ChatView.from_history([*history, after])
    for view in (live, rebuilt):
        bubbles = _bubbles(view.messages())
        [unanswered] = [b for b in bubbles if any("second message" in t for t in b)]
        [new] = [b for b in bubbles if any("third message" in t for t in b)]
        assert unanswered == ["second message while waiting"]
        assert new == ["third message after stop"]
        notes = [b for b in bubbles if any("Not answered" in t for t in b)]
        assert len(notes) == 1
        assert bubbles.index(notes[0]) == bubbles.index(unanswered) + 1  # right under it
    assert live.messages() == rebuilt.messages()


def test_the_unanswered_note_goes_with_its_message_when_the_chat_is_cut() -> None:
    view = ChatView.from_history(_stopped_history())
    view.truncate(2)  # (an edit or a retry cut the unanswered message)
    assert not any("Not answered" in str(m["content"]) for m in view.messages())


# -- an empty reply ----------------------------------------------------------------------------


def test_an_empty_reply_says_the_model_sent_no_text() -> None:
    """A reply with no text, image or tool call was an empty "Executor" header."""
    empty = Message(id="a1", role=Role.ASSISTANT, agent=AgentName.AGENT_EXECUTOR, content="")
    live = ChatView()
    live.apply(MessageStarted(message_id="a1", agent=AgentName.AGENT_EXECUTOR))
    live.apply(MessageCompleted(message=empty))
    for view in (live, ChatView.from_history([empty])):
        [shown] = view.messages()
        assert "The model sent no text." in str(shown["content"])
    calling = empty.model_copy(
        update={"tool_calls": (ToolCall(id="c1", name="run_python", arguments="{}"),)}
    )
    assert "no text" not in str(ChatView.from_history([calling]).messages())


# -- an error ----------------------------------------------------------------------------------


def _failed_turn(started: bool) -> tuple[list[Event], list[Message]]:
    """The events of a turn that failed (mid-reply, or before any reply began: then the
    turn files an empty failed note), and the history it left."""
    failure = ErrorEvent(code="model_error", message="fake: server error (HTTP 500)")
    kept = {"code": failure.code, "message": failure.message}
    prompt = Message(id="u1", role=Role.USER, content="servererror please")
    reply = Message(
        id="a1",
        role=Role.ASSISTANT,
        agent=AgentName.AGENT_EXECUTOR,
        content="half a" if started else "",
        status=MessageStatus.ERROR,
        metadata={"error": kept} if started else {"error": kept, "display_only": True},
    )
    events: list[Event] = [MessageCompleted(message=prompt)]
    if started:
        events += [
            MessageStarted(message_id="a1", agent=AgentName.AGENT_EXECUTOR),
            TextDelta(message_id="a1", delta="half a"),
        ]
    events += [failure, MessageCompleted(message=reply)]
    return events, [prompt, reply]


@pytest.mark.parametrize("started", [True, False])
def test_an_error_reads_the_same_live_and_after_a_reload(started: bool) -> None:
    """The person reads "Error:" and the message, once: no "[error]" line above it, no
    internal code such as "(model_error)", drawn the same live as after a reload."""
    events, history = _failed_turn(started)
    live = ChatView()
    for event in events:
        live.apply(event)
    rebuilt = ChatView.from_history(history)
    assert live.messages() == rebuilt.messages()
    shown = "\n".join(str(m["content"][0]["text"]) for m in live.messages())
    assert shown.count("server error (HTTP 500)") == 1
    assert "Error:</strong> fake: server error (HTTP 500)" in shown
    assert "[error]" not in shown and "(model_error)" not in shown


# -- what a message sent while the agent is busy waits for -------------------------------------


@pytest.fixture
def toasts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    said: list[str] = []
    monkeypatch.setattr(gr, "Info", lambda message, *_a, **_k: said.append(message))
    monkeypatch.setattr(gr, "Warning", lambda message, *_a, **_k: said.append(message))
    yield said


async def _send_while_busy(handlers: Handlers, session_id: str, text: str) -> None:
    page = handlers.page
    form = {page.chat_input: text, page.session_id: session_id, page.ticket: "1"}
    sending = cast(AsyncGenerator[Any, None], handlers.send(form, None))  # type: ignore[arg-type]
    await anext(sending)  # (the toast is said before the first update)
    await sending.aclose()


async def _busy(tmp_path: Path, model: ScriptedModel) -> tuple[SessionManager, Handlers]:
    _page, manager, handlers = await page_handlers(tmp_path, model)
    return manager, handlers


async def test_a_message_sent_while_an_approval_is_open_is_said_to_wait_for_the_answer(
    tmp_path: Path, toasts: list[str]
) -> None:
    """ "Queued: the agent reads it when the current step ends" said nothing of the step
    waiting on the person: the approval must be answered first (or Stop drops it)."""
    model = ScriptedModel([call("run_python", code="print(1)"), "done"])
    manager, handlers = await _busy(tmp_path, model)
    try:
        chat = await manager.create("local")
        async with chat.subscribe() as events:
            await chat.send("run something")
            await next_event(events, lambda e: isinstance(e, ApprovalRequested))
        await _send_while_busy(handlers, chat.id, "second message while waiting")
        assert toasts == [QUEUED_BEHIND_APPROVAL]
        assert "answer" in QUEUED_BEHIND_APPROVAL and "Stop" in QUEUED_BEHIND_APPROVAL
        assert [m.content for m in chat.queued] == ["second message while waiting"]
        await chat.stop()
    finally:
        await manager.close()


async def test_a_message_sent_during_autochats_delay_is_said_to_be_answered_now(
    tmp_path: Path, toasts: list[str]
) -> None:
    """No step runs while AutoChat waits between two turns: the message is taken up at once
    (in place of the next automatic turn), not queued behind a step."""
    manager, handlers = await _busy(tmp_path, ScriptedModel(default="a reply"))
    try:
        chat = await manager.create("local")
        await chat.update(autochat=AutoChatSettings(enabled=True, max_turns=3, delay_s=60))
        async with chat.subscribe() as events:
            await chat.send("work on it")
            await next_event(events, lambda e: isinstance(e, AutoChatTurn))
        assert chat.busy and chat.state is not InterpreterState.RUNNING
        await _send_while_busy(handlers, chat.id, "a word in between")
        assert toasts == [ANSWERED_NOW_IN_AUTOCHAT]
        assert ANSWERED_NOW_IN_AUTOCHAT != QUEUED_NOTE
        await chat.stop()
    finally:
        await manager.close()


async def test_a_message_queued_behind_an_open_approval_says_it_waits_for_the_answer() -> None:
    """The queued bubble said "the agent reads it when the current step ends" while that
    step waited on the person."""
    await asyncio.sleep(0)  # (make_page needs the running loop)
    page = make_page()
    queued = [Message(role=Role.USER, content="second message while waiting")]
    panels = PanelState()
    view = PageView(page, ChatView(), panels, queued=queued)
    [before] = view.updates(full=True)[page.chatbot]
    assert QUEUED_MARK in str(before["content"])
    call_ = ToolCall(id="c1", name="write_file", arguments="{}")
    panels.apply(ApprovalRequested(approval_id="p1", call=call_, summary="Write a file"))
    [waiting] = view.updates()[page.chatbot]
    assert QUEUED_BEHIND_APPROVAL_MARK in str(waiting["content"])
    assert QUEUED_MARK not in str(waiting["content"])


# -- a fraction typed as a count of turns ------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "label"),
    [("max_turns", "Max automatic turns"), ("token_budget", "Token budget")],
)
async def test_a_fraction_of_a_count_is_named_not_rounded(field: str, label: str) -> None:
    """2.5 typed in Max automatic turns was rounded to 2 by the box (Gradio's `precision`)
    before any check could name it, while the other bad values were named: it is refused
    as the Advanced settings refuse a fraction."""
    await asyncio.sleep(0)  # (make_page needs the running loop)
    page = make_page()
    box = page.autochat_limits()[field]
    typed = box.preprocess(2.5)  # what the handlers get when 2.5 is typed
    form = Form.read(page, {box: typed})
    assert form.problem(field, limit=True) == f"{label} must be a whole number"
    assert Form.read(page, {box: box.preprocess(3)}).problem(field, limit=True) is None
