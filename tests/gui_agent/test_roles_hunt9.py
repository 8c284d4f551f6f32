"""Defects found driving the planner and the supervisor from Python (roles hunt 9), each with
its test: a plan the person's message stopped names the steps not run; a worker's call a
Stop ended is answered in the history; a delegation says how long it took; a call stopped
while awaiting approval says "not run"; a supervisor at its step limit says so."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from backends.gradio.renderer import ChatView
from connectors.function import FunctionInfo, FunctionModel
from connectors.scripted import ScriptedModel, call
from gui_agent.agents.base import AgentDeps
from gui_agent.agents.planner import PLAN_LEFT
from gui_agent.agents.supervisor import SupervisorAgent
from gui_agent.agents.tool_step import NOT_RUN
from gui_agent.quick import create_interpreter
from gui_agent.repl_display import format_event
from gui_agent.session import Session, unanswered_calls
from gui_agent.store import MemoryStore
from gui_agent.tools import Tool, tool
from schema import (
    AgentName,
    ApprovalRequested,
    Event,
    Message,
    MessageCompleted,
    MessageStatus,
    ModelResponse,
    PermissionMode,
    Role,
    RunFinished,
    RunOutcome,
    SessionSettings,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    new_id,
)
from tests.gui_agent.helpers import make, next_event, of_type


def _waiting_tool(started: asyncio.Event, go: asyncio.Event) -> Tool:
    @tool
    async def look() -> str:
        """Look around."""
        started.set()
        await go.wait()
        return "looked"

    return look


def _finished(events: list[Event]) -> list[RunFinished]:
    return [e for e in events if isinstance(e, RunFinished)]


# -- 1. a plan the person's message stopped -------------------------------------------------


async def test_a_message_answered_during_a_plan_step_names_the_steps_not_run(
    tmp_path: Path,
) -> None:
    started, go = asyncio.Event(), asyncio.Event()
    interpreter, model = make(
        tmp_path,
        ["1. a\n2. b\n3. c", call("look"), "a done"],
        tools=[_waiting_tool(started, go)],
        permissions={"look": PermissionMode.ALLOW},
    )
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    async with asyncio.timeout(20), interpreter.subscribe() as sub:
        await interpreter.send("plan this")
        await started.wait()
        await interpreter.send("wait, also check d")
        go.set()
        events = [e async for e in sub.until_idle()]
    (finished,) = _finished(events)
    assert finished.outcome is RunOutcome.COMPLETED
    assert finished.detail == (
        "your message came in during plan step 1 of 3, answered there; steps 2–3 were not run"
    )
    history = interpreter.session.history
    assert [m.metadata["plan_step"] for m in history if m.metadata.get("plan_step")] == [1]
    note = history[-1]
    assert note.metadata.get("note") == PLAN_LEFT and note.display_only
    assert note.content == (
        "Plan steps 2–3 were not run: your message came in during step 1 of 3, and I "
        "answered it instead."
    )
    assert note.agent is AgentName.LLM_PLANNER
    assert note in [e.message for e in events if isinstance(e, MessageCompleted)]
    assert isinstance(model, ScriptedModel) and model.remaining == 0  # nothing more asked


async def test_a_message_sent_while_the_plan_is_written_names_the_steps_not_run(
    tmp_path: Path,
) -> None:
    reached, gate = asyncio.Event(), asyncio.Event()

    async def model(messages: list[Message], info: FunctionInfo) -> str | ModelResponse:
        if info.call_number == 1:
            reached.set()
            await gate.wait()
            return "1. a\n2. b"
        if info.call_number == 2:
            return "1. something else"
        return "done"

    interpreter, _ = make(tmp_path, FunctionModel(model))
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    async with asyncio.timeout(20), interpreter.subscribe() as sub:
        await interpreter.send("plan this")
        await reached.wait()
        await interpreter.send("actually, do something else")
        gate.set()
        events = [e async for e in sub.until_idle()]
    first, second = _finished(events)
    assert first.outcome is RunOutcome.COMPLETED
    assert first.detail == (
        "your message came in before plan step 1 of 2 began; steps 1–2 were not run"
    )
    assert second.outcome is RunOutcome.COMPLETED and second.detail == ""
    history = interpreter.session.history
    notes = [m for m in history if m.metadata.get("note") == PLAN_LEFT]
    assert [m.content for m in notes] == [
        "Plan steps 1–2 were not run: your message came in before step 1 of 2 began. It is "
        "answered next, with a plan of its own."
    ]
    # Said after the plan, before the message that stopped it (its own turn, planned anew).
    asked = next(i for i, m in enumerate(history) if m.content == "actually, do something else")
    assert history.index(notes[0]) == asked - 1


async def test_messages_that_waited_together_are_planned_together(tmp_path: Path) -> None:
    """Two messages sent while a plan ran: the next turn took the first and planned it, then
    saw the second still waiting, dropped that plan (saying the message "came in before step
    1 began") and planned the second alone. The first was never acted on."""
    reached, gate = asyncio.Event(), asyncio.Event()
    plans: list[list[str]] = []

    async def model(messages: list[Message], info: FunctionInfo) -> str | ModelResponse:
        if info.call_number == 1:
            plans.append([m.content for m in messages if m.role is Role.USER])
            reached.set()
            await gate.wait()
            return "1. a\n2. b"
        if messages[-1].role is Role.SYSTEM:  # a planning call (its instruction comes last)
            plans.append([m.content for m in messages if m.role is Role.USER])
            return "1. both at once"
        return "done"

    interpreter, _ = make(tmp_path, FunctionModel(model))
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    async with asyncio.timeout(20), interpreter.subscribe() as sub:
        await interpreter.send("plan this")
        await reached.wait()
        await interpreter.send("msg A please")
        await interpreter.send("msg B please")
        gate.set()
        events = [e async for e in sub.until_idle()]
    first, second = _finished(events)
    assert first.detail == (
        "your message came in before plan step 1 of 2 began; steps 1–2 were not run"
    )
    assert second.outcome is RunOutcome.COMPLETED and second.detail == ""  # no phantom plan
    assert len(plans) == 2 and plans[1][-2:] == ["msg A please", "msg B please"]
    history = interpreter.session.history
    [step] = [m for m in history if m.metadata.get("plan_step")]
    assert "msg A please" in step.content and "msg B please" in step.content
    assert [m.content for m in history if m.metadata.get("note") == PLAN_LEFT] == [
        "Plan steps 1–2 were not run: your message came in before step 1 of 2 began. It is "
        "answered next, with a plan of its own."
    ]
    assert not any(m.metadata.get("unanswered") for m in history)


# -- 2. a worker's call a Stop ended ----------------------------------------------------------


async def test_a_workers_call_a_stop_ended_shows_ended_once_the_chat_is_loaded_again(
    tmp_path: Path,
) -> None:
    started, never = asyncio.Event(), asyncio.Event()
    store = MemoryStore()
    interpreter = create_interpreter(
        ScriptedModel([call("delegate", worker="agent_executor", task="look"), call("look")]),
        tools=[_waiting_tool(started, never)],
        builtin_tools=False,
        agent=AgentName.SUPERVISOR,
        permissions={"look": PermissionMode.ALLOW},
        workdir=tmp_path,
        store=store,
    )
    await store.create_session(interpreter.session.to_record(interpreter.state))
    async with asyncio.timeout(20), interpreter.subscribe() as sub:
        await interpreter.send("find out")
        await started.wait()
        assert await interpreter.stop()
        events = sub.pending()
    look_calls = [e.call.id for e in events if isinstance(e, ToolCallStarted)][1:]
    (look_id,) = look_calls
    saved = await store.load_messages(interpreter.id)
    (answer,) = [m for m in saved if m.tool_call_id == look_id]
    assert answer.status is MessageStatus.INTERRUPTED and answer.display_only
    assert answer.metadata["was_running"] is True
    assert answer.metadata["worker"] == AgentName.AGENT_EXECUTOR.value
    delegated = [m for m in saved if m.role is Role.TOOL and m.name == "delegate"]
    assert saved.index(answer) < saved.index(delegated[0])  # before the delegate's answer
    assert unanswered_calls(saved) is None
    assert [e.result.call_id for e in of_type(events, "tool_call_finished")].count(look_id) == 1
    steps = [m["metadata"] for m in ChatView.from_history(saved).messages() if m["metadata"]]
    (look_step,) = [s for s in steps if s.get("title") == "look"]
    assert look_step["status"] == "done" and look_step["log"] == "interrupted"


async def test_a_workers_call_awaiting_approval_at_a_stop_is_kept_as_not_run(
    tmp_path: Path,
) -> None:
    interpreter = create_interpreter(
        ScriptedModel([call("delegate", worker="agent_executor", task="look"), call("look")]),
        tools=[_waiting_tool(asyncio.Event(), asyncio.Event())],
        builtin_tools=False,
        agent=AgentName.SUPERVISOR,
        permissions={"look": PermissionMode.ASK},
        workdir=tmp_path,
    )
    async with asyncio.timeout(20), interpreter.subscribe() as sub:
        await interpreter.send("find out")
        request = await next_event(sub, lambda e: isinstance(e, ApprovalRequested))
        assert await interpreter.stop()
    assert isinstance(request, ApprovalRequested)
    history = interpreter.session.history
    (answer,) = [m for m in history if m.tool_call_id == request.call.id]
    assert answer.display_only and answer.metadata.get(NOT_RUN) is True
    assert answer.metadata["was_running"] is False
    steps = [m["metadata"] for m in ChatView.from_history(history).messages() if m["metadata"]]
    (look_step,) = [s for s in steps if s.get("title") == "look"]
    assert look_step["status"] == "done"


class _FailsMidCall:
    """A worker role that asks for a tool, says the call started, then fails."""

    name = AgentName.AGENT_EXECUTOR
    description = "Fails while its tool runs."

    async def run(self, session: Session, deps: AgentDeps, prompt: Message) -> AsyncIterator[Event]:
        asked = ToolCall(id=new_id(), name="look", arguments="{}")
        message = Message(role=Role.ASSISTANT, agent=self.name, tool_calls=[asked])
        session.add(message)
        yield MessageCompleted(message=message)
        yield ToolCallStarted(call=asked, parent_message_id=message.id, agent=self.name)
        raise RuntimeError("the worker broke")


async def test_a_workers_call_its_failure_ended_shows_ended_once_the_chat_is_loaded_again(
    tmp_path: Path,
) -> None:
    supervisor = SupervisorAgent(workers={AgentName.AGENT_EXECUTOR: _FailsMidCall()})
    interpreter = create_interpreter(
        ScriptedModel([call("delegate", worker="agent_executor", task="look"), "it broke"]),
        architectures={AgentName.SUPERVISOR: supervisor},
        workdir=tmp_path,
    )
    _ = [e async for e in interpreter.chat("find out")]
    history = interpreter.session.history
    asked = next(m for m in history if m.agent is AgentName.AGENT_EXECUTOR and m.tool_calls)
    (answer,) = [m for m in history if m.tool_call_id == asked.tool_calls[0].id]
    assert answer.display_only and answer.metadata["delegated_by"]
    assert answer.content == "Not finished: the worker failed (RuntimeError: the worker broke)."
    steps = [m["metadata"] for m in ChatView.from_history(history).messages() if m["metadata"]]
    (look_step,) = [s for s in steps if s.get("title") == "look"]
    assert look_step["status"] == "done" and look_step["log"] == "error"


# -- 3. how long a delegation took --------------------------------------------------------------


async def test_a_delegation_says_how_long_its_worker_took(tmp_path: Path) -> None:
    async def model(messages: list[Message], info: FunctionInfo) -> str | ModelResponse:
        if info.call_number == 1:
            return call("delegate", worker="thought", task="think")
        if info.call_number == 2:
            await asyncio.sleep(0.2)  # the worker's model at work, not the test waiting
            return "thought about it"
        return "answer"

    interpreter, _ = make(tmp_path, FunctionModel(model))
    await interpreter.set_agent(AgentName.SUPERVISOR)
    events = [e async for e in interpreter.chat("go")]
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.result.duration_ms >= 150  # (a timer may wake a little early)
    assert format_event(finished) != "\n  ✓ delegate (0 ms)"
    (answer,) = [m for m in interpreter.session.history if m.name == "delegate"]
    assert answer.metadata["duration_ms"] == finished.result.duration_ms  # shown after a reload


# -- 4. a call stopped while awaiting approval ------------------------------------------------


async def test_a_call_stopped_while_awaiting_approval_says_not_run(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, [call("write_file", path="a.txt", content="x")])
    async with asyncio.timeout(20), interpreter.subscribe() as sub:
        await interpreter.send("write it")
        await next_event(sub, lambda e: isinstance(e, ApprovalRequested))
        assert await interpreter.stop()
        events = sub.pending()
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.result.metadata.get(NOT_RUN) is True
    assert format_event(finished) == "\n  ✗ write_file (not run)"
    answer = interpreter.session.history[-1]
    assert answer.tool_call_id == finished.result.call_id
    assert answer.metadata.get(NOT_RUN) is True  # the page says "Not run" after a reload too


# -- 5. a supervisor at its step limit ------------------------------------------------------


async def test_a_supervisor_at_its_step_limit_says_so_as_the_executor_does(
    tmp_path: Path,
) -> None:
    limited = SessionSettings(max_iterations=2)
    executor, _ = make(tmp_path / "e", [call("list_files"), call("list_files")])
    executor.session.settings = limited
    _ = [e async for e in executor.chat("go")]
    expected = executor.session.history[-1]
    assert expected.metadata.get("truncated") is True

    replies: list[str | ModelResponse] = [call("delegate", worker="thought", task="t0"), "w0"]
    replies += [call("delegate", worker="thought", task="t1"), "w1"]
    supervisor, _ = make(tmp_path / "s", replies)
    supervisor.session.settings = limited
    await supervisor.set_agent(AgentName.SUPERVISOR)
    events = [e async for e in supervisor.chat("go")]
    (finished,) = _finished(events)
    assert finished.outcome is RunOutcome.MAX_ITERATIONS
    note = supervisor.session.history[-1]
    assert note.role is Role.ASSISTANT and note.agent is AgentName.SUPERVISOR
    assert note.content == expected.content
    assert note.metadata == {"truncated": True} and not note.display_only
    assert note in [e.message for e in events if isinstance(e, MessageCompleted)]
