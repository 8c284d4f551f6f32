"""Agent switches in a view rebuilt from the history (switches.py): a switch still in the
session's recent events keeps its reason and its place, as a tab that watched it shows it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr

from backends.gradio.layout import Page, build_page
from backends.gradio.panels import AutoChatStatus
from backends.gradio.renderer import ChatView
from backends.gradio.stream import PageView
from backends.gradio.switches import placed_notes
from connectors.scripted import ScriptedModel
from gui_agent.exceptions import ModelServerError
from gui_agent.quick import create_interpreter
from gui_agent.wording import AUTOCHAT_STILL_ON
from schema import (
    AgentName,
    AgentSwitched,
    AutoChatSettings,
    AutoChatStopped,
    AutoChatStopReason,
    ErrorEvent,
    Message,
    MessageCompleted,
    MessageStarted,
    Role,
    SessionUpdated,
)

PICKED = "Switched to Thought from Executor (picked by the person)"


def texts(view: ChatView) -> list[str]:
    return [str(message["content"][0]["text"]) for message in view.messages()]


def make_page() -> Page:
    with gr.Blocks():
        return build_page(
            title="t",
            notice=None,
            agents=list(AgentName),
            models=["scripted"],
            default_model="scripted",
            model_note="",
        )


async def test_a_picked_role_keeps_its_reason_and_place_when_the_view_is_rebuilt(
    tmp_path: Path,
) -> None:
    interpreter = create_interpreter(ScriptedModel(default="noted"), workdir=tmp_path)
    await interpreter.send("before the switch")
    await interpreter.wait_idle()
    await interpreter.set_agent(AgentName.THOUGHT)
    await interpreter.send("after the switch")
    await interpreter.wait_idle()
    live = ChatView()  # a tab that watched it all
    for event in interpreter.events_since(0):
        live.apply(event)
    shown = texts(live)
    assert any(PICKED in text for text in shown)

    history = interpreter.session.history
    from_history_alone = texts(ChatView.from_history(history))
    # the message after the switch keeps it (metadata "switched"): the history alone says it
    assert from_history_alone == shown
    reopened = PageView.of(make_page(), interpreter, icons={})  # a reload, another tab
    assert texts(reopened.chat) == shown
    switch = next(i for i, text in enumerate(shown) if PICKED in text)
    assert shown[switch + 1] == "after the switch"


async def test_a_view_built_after_autochat_stopped_says_why_until_it_is_switched(
    tmp_path: Path,
) -> None:
    """A tab that opens or catches up on a chat after its AutoChat run stopped (a reload,
    another tab following it, a keep-alive started again) says why it stopped, as a tab
    that watched the run does, until the switch is moved."""
    interpreter = create_interpreter(ScriptedModel(default="noted"), workdir=tmp_path)
    on = AutoChatSettings(enabled=True, max_turns=1, delay_s=0)
    async with interpreter.subscribe() as subscription:
        await interpreter.update(autochat=on)
        await interpreter.send("keep going")
        stopped = False
        while not stopped:
            events, _more = await subscription.next_events(stop_at_idle=False)
            stopped = any(isinstance(event, AutoChatStopped) for event in events)
    await interpreter.wait_idle()

    def watched() -> str:  # a tab open since before AutoChat was switched on
        live = AutoChatStatus()
        for event in interpreter.events_since(0):
            live.apply(event)
        return live.text()

    def rebuilt() -> str:
        return PageView.of(make_page(), interpreter, icons={}).panels.auto.text()

    assert not interpreter.autochat_active
    limit = "AutoChat stopped after 1 automatic turn: it reached its limit of automatic turns."
    assert rebuilt() == f"{limit} {AUTOCHAT_STILL_ON}"
    assert rebuilt() == watched()
    await interpreter.update(autochat=on.model_copy(update={"max_turns": 3}))  # a limit only
    assert rebuilt() == f"{limit} {AUTOCHAT_STILL_ON}"
    assert rebuilt() == watched()
    await interpreter.update(autochat=on.model_copy(update={"enabled": False}))
    assert rebuilt() == watched() == "AutoChat is off."


def _said(text: str, role: Role = Role.USER) -> Message:
    return Message(role=role, content=text)


def _switch() -> AgentSwitched:
    return AgentSwitched(
        from_agent=AgentName.AGENT_EXECUTOR, to_agent=AgentName.THOUGHT, reason="picked"
    )


def _done(message: Message) -> MessageCompleted:
    return MessageCompleted(message=message)


def test_a_switch_stands_before_the_next_message_kept_or_at_the_end() -> None:
    first, reply, cut, rerun = _said("a"), _said("b", Role.ASSISTANT), _said("c"), _said("c")
    switch, late = _switch(), _switch()
    events: list[Any] = [_done(first), _done(reply), switch, _done(cut)]
    events += [SessionUpdated(fields={"history_length": 2}), _done(rerun), late]
    assert placed_notes(events, [first, reply, rerun]) == {2: [switch], 3: [late]}
    # nothing in the buffer but the switch: it came after everything the history holds
    assert placed_notes([switch], [first, reply]) == {2: [switch]}


def test_a_clear_drops_the_switches_before_it() -> None:
    again = _said("again")
    events: list[Any] = [_switch(), SessionUpdated(fields={"history_length": 0}), _done(again)]
    assert placed_notes(events, [again]) == {}


def test_errors_and_autochat_stops_are_placed_as_switches_are() -> None:
    asked, failed, later = _said("a"), _said("", Role.ASSISTANT), _said("b")
    error = ErrorEvent(code="model_error", message="upstream exploded")
    stopped = AutoChatStopped(reason=AutoChatStopReason.ERROR, turns=0)
    events: list[Any] = [_done(asked), MessageStarted(message_id=failed.id, role=Role.ASSISTANT)]
    events += [error, stopped, _done(failed), _done(later)]
    # the failed reply started before the error: the notes stand after it, before "b"
    assert placed_notes(events, [asked, failed, later]) == {2: [error, stopped]}
    view = ChatView.from_history([asked, failed, later], notes={2: [error, stopped]})
    shown = texts(view)
    assert "upstream exploded" in shown[2] and shown[-1] == "b"


async def test_a_retried_failure_leaves_no_error_in_a_rebuilt_view_as_in_a_watching_one(
    tmp_path: Path,
) -> None:
    """After a retry, a reload showed the replaced attempt's error under the reply before
    it (the message it followed was cut, so it waited for the next kept one)."""
    failure = ModelServerError("upstream exploded", provider="scripted")
    model = ScriptedModel(["hello back", failure, "second answer"])
    interpreter = create_interpreter(model, workdir=tmp_path)
    for say in (interpreter.send("hello"), interpreter.send("this one fails")):
        await say
        await interpreter.wait_idle()
    await interpreter.retry()
    await interpreter.wait_idle()
    live = ChatView()  # a tab that watched it all
    for event in interpreter.events_since(0):
        live.apply(event)
    shown = texts(live)
    assert shown[-2] == "this one fails" and shown[-1].endswith("second answer")
    assert not any("upstream exploded" in text for text in shown)
    reopened = PageView.of(make_page(), interpreter, icons={})  # a reload, another tab
    assert texts(reopened.chat) == shown


def test_a_cut_drops_the_notes_after_the_messages_it_cut_and_keeps_the_others() -> None:
    asked, answer, cut, rerun = _said("a"), _said("b", Role.ASSISTANT), _said("c"), _said("c")
    stopped = AutoChatStopped(reason=AutoChatStopReason.MAX_TURNS, turns=1)
    error = ErrorEvent(code="model_error", message="upstream exploded")
    events: list[Any] = [_done(asked), _done(answer), stopped, _done(cut), error]
    events += [SessionUpdated(fields={"history_length": 2}), _done(rerun)]
    # the stop came after a message kept, the error after the one cut
    assert placed_notes(events, [asked, answer, rerun]) == {2: [stopped]}
