"""SUPERVISOR: delegates tasks to workers on contexts of their own; people see the workers'
steps, models never do."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from connectors.function import FunctionInfo, FunctionModel
from connectors.scripted import ScriptedModel, call
from gui_agent.agents import SupervisorAgent
from gui_agent.agents.supervisor import DELEGATE
from gui_agent.tools import tool
from schema import (
    AgentName,
    ApprovalDecision,
    ApprovalRequested,
    AutoChatSettings,
    InterpreterState,
    Message,
    MessageCompleted,
    MessageStarted,
    ModelResponse,
    Role,
    RunFinished,
    RunOutcome,
    TextDelta,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    Usage,
)
from tests.gui_agent.helpers import make, next_event


async def test_a_delegated_task_runs_on_its_own_context_and_its_answer_comes_back(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("a")
    interpreter, model = make(
        tmp_path,
        [
            call(DELEGATE, worker="AGENT_EXECUTOR", task="List the files in the folder."),
            call("list_files"),
            "There is a.txt.",
            "Your folder holds one file, a.txt.",
        ],
    )
    assert isinstance(model, ScriptedModel)
    await interpreter.set_agent(AgentName.SUPERVISOR)
    events = [e async for e in interpreter.chat("what is in my folder?")]

    history = interpreter.session.history
    shown = [(m.role, m.agent, bool(m.display_only)) for m in history]
    assert shown == [
        (Role.USER, None, False),
        (Role.ASSISTANT, AgentName.SUPERVISOR, False),  # delegate call
        (Role.USER, None, True),  # the task, as the worker saw it
        (Role.ASSISTANT, AgentName.AGENT_EXECUTOR, True),  # list_files call
        (Role.TOOL, AgentName.AGENT_EXECUTOR, True),
        (Role.ASSISTANT, AgentName.AGENT_EXECUTOR, True),
        (Role.TOOL, AgentName.SUPERVISOR, False),  # the worker's answer
        (Role.ASSISTANT, AgentName.SUPERVISOR, False),
    ]
    delegate_call = history[1].tool_calls[0]
    assert all(m.metadata["delegated_by"] == delegate_call.id for m in history[2:6])
    assert history[6].tool_call_id == delegate_call.id
    assert history[6].content == "There is a.txt."
    assert history[-1].content == "Your folder holds one file, a.txt."

    supervisor, worker, _, again = model.requests
    assert {t.name for t in supervisor.tools} == {DELEGATE, "task_complete"}
    assert "supervisor" in supervisor.messages[-1].content  # its instruction, last, not kept
    assert [m.content for m in worker.messages if m.role is Role.USER] == [
        "List the files in the folder."
    ]  # the worker sees the task, not the person's conversation
    assert "run_python" in {t.name for t in worker.tools}
    sent = [m.role for m in again.messages if m.role is not Role.SYSTEM]
    assert sent == [Role.USER, Role.ASSISTANT, Role.TOOL]  # no worker message in between

    started = [e for e in events if isinstance(e, MessageStarted)]
    worker_ids = {m.id for m in history[3:6] if m.role is Role.ASSISTANT}
    assert {e.message_id for e in started if e.parent_id == delegate_call.id} == worker_ids
    delegated = [e for e in events if isinstance(e, ToolCallFinished) and e.result.name == DELEGATE]
    assert delegated[0].result.content == "There is a.txt." and not delegated[0].result.is_error
    assert any(isinstance(e, ToolCallStarted) and e.call.name == DELEGATE for e in events)
    assert [e.message.id for e in events if isinstance(e, MessageCompleted)] == [
        m.id for m in history
    ]
    assert interpreter.session.usage.requests == 4


async def test_an_unknown_worker_or_empty_task_is_an_error_the_supervisor_reads(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(
        tmp_path,
        [call(DELEGATE, worker="NOBODY", task="x"), "I could not delegate that."],
    )
    await interpreter.set_agent(AgentName.SUPERVISOR)
    _ = [e async for e in interpreter.chat("do it")]
    result = interpreter.session.history[2]
    assert result.role is Role.TOOL and result.metadata["is_error"] is True
    assert "unknown worker 'NOBODY'" in result.content and "AGENT_EXECUTOR" in result.content


@pytest.mark.parametrize("named", ["executor", " Executor ", "agent_executor", "THOUGHT"])
async def test_a_worker_named_as_people_name_roles_is_found(tmp_path: Path, named: str) -> None:
    interpreter, _ = make(
        tmp_path,
        [call(DELEGATE, worker=named, task="Say hi."), "hi", "The worker said hi."],
    )
    await interpreter.set_agent(AgentName.SUPERVISOR)
    _ = [e async for e in interpreter.chat("delegate a greeting")]
    answer = next(m for m in interpreter.session.history if m.name == DELEGATE)
    assert answer.metadata["is_error"] is False and answer.content == "hi", answer.content


async def test_a_worker_asks_for_approval_and_goes_on_when_allowed(tmp_path: Path) -> None:
    interpreter, _ = make(
        tmp_path,
        [
            call(DELEGATE, worker="AGENT_EXECUTOR", task="Print 6*7 with Python."),
            call("run_python", code="print(6*7)"),
            "It printed 42.",
            "The answer is 42.",
        ],
    )
    await interpreter.set_agent(AgentName.SUPERVISOR)
    async with interpreter.subscribe() as sub:
        await interpreter.send("compute it")
        request = await next_event(sub, lambda e: isinstance(e, ApprovalRequested))
        assert isinstance(request, ApprovalRequested)
        assert interpreter.state is InterpreterState.WAITING
        interpreter.approve(request.approval_id, ApprovalDecision.ALLOW_ONCE)
        await interpreter.wait_idle()
    history = interpreter.session.history
    assert any(m.role is Role.TOOL and "42" in m.content and m.display_only for m in history)
    assert history[-1].content == "The answer is 42."


async def test_stop_inside_a_worker_keeps_the_history_sendable(tmp_path: Path) -> None:
    long_reply = " ".join(f"word{i}" for i in range(3000))
    interpreter, _ = make(
        tmp_path,
        [call(DELEGATE, worker="THOUGHT", task="Think at length."), long_reply, "next"],
        delay_s=0.002,
    )
    await interpreter.set_agent(AgentName.SUPERVISOR)
    async with interpreter.subscribe() as sub:
        await interpreter.send("go")
        await next_event(sub, lambda e: isinstance(e, TextDelta) and e.delta.startswith("word5"))
        assert await interpreter.stop()
    history = interpreter.session.history
    partial = history[-2]
    assert partial.agent is AgentName.THOUGHT and partial.display_only
    assert partial.content.startswith("word0") and partial.metadata["delegated_by"]
    answered = history[-1]
    assert answered.role is Role.TOOL and answered.tool_call_id == history[1].tool_calls[0].id
    window = [m.role for m in interpreter.window().messages if m.role is not Role.SYSTEM]
    assert window == [Role.USER, Role.ASSISTANT, Role.TOOL]
    events = [e async for e in interpreter.chat("go on")]  # the session stays usable
    assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.COMPLETED]


async def test_stop_during_a_workers_tool_closes_every_open_tool_step(tmp_path: Path) -> None:
    @tool
    async def slow(seconds: float) -> str:
        """Wait a while."""
        await asyncio.sleep(seconds)
        return "waited"

    interpreter, _ = make(
        tmp_path,
        [call(DELEGATE, worker="AGENT_EXECUTOR", task="wait"), call("slow", seconds=30)],
        tools=[slow],
    )
    await interpreter.set_agent(AgentName.SUPERVISOR)
    async with interpreter.subscribe() as sub:
        await interpreter.send("go")
        await next_event(sub, lambda e: isinstance(e, ToolCallStarted) and e.call.name == "slow")
        assert await interpreter.stop()
        events = sub.pending()
    finished = {e.result.name: e.result for e in events if isinstance(e, ToolCallFinished)}
    # Answered as the supervisor's own calls are (the answer is kept: see test_roles_hunt9)
    assert finished["slow"].is_error and "Interrupted while running" in finished["slow"].content
    assert finished[DELEGATE].is_error  # answered, so the supervisor's call is not dangling
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert started == []  # nothing new starts after Stop


def test_a_supervisor_needs_workers() -> None:
    with pytest.raises(ValueError, match="worker"):
        SupervisorAgent(workers={})


async def test_supervisor_steps_are_capped(tmp_path: Path) -> None:
    replies = [call(DELEGATE, worker="THOUGHT", task=f"think {n}") for n in range(4)]
    interpreter, _ = make(
        tmp_path, [r for pair in zip(replies, ["ok"] * 4, strict=True) for r in pair]
    )
    session = interpreter.session
    session.settings = session.settings.model_copy(update={"max_iterations": 2})
    await interpreter.set_agent(AgentName.SUPERVISOR)
    events = [e async for e in interpreter.chat("loop")]
    (finished,) = [e for e in events if isinstance(e, RunFinished)]
    assert finished.outcome is RunOutcome.MAX_ITERATIONS


async def test_the_token_budget_ends_the_supervisors_turn_after_the_work_that_spent_it(
    tmp_path: Path,
) -> None:
    spent = Usage(input_tokens=60, output_tokens=40, requests=1)

    def delegating(n: int) -> ModelResponse:
        arguments = json.dumps({"worker": "THOUGHT", "task": f"think {n}"})
        call_ = ToolCall(id=f"call_{n}", name=DELEGATE, arguments=arguments)
        return ModelResponse(tool_calls=(call_,), usage=spent)

    replies = [r for n in range(5) for r in (delegating(n), ModelResponse(text="ok", usage=spent))]
    interpreter, model = make(
        tmp_path, replies, autochat=AutoChatSettings(enabled=True, token_budget=150)
    )
    assert isinstance(model, ScriptedModel)
    await interpreter.set_agent(AgentName.SUPERVISOR)
    events = [e async for e in interpreter.chat("spend")]
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert [e.outcome for e in finished] == [RunOutcome.BUDGET]
    assert len(model.requests) == 2  # the delegate call and the worker's answer: 200 >= 150
    history = interpreter.session.history
    assert history[-1].role is Role.TOOL  # the delegate call is answered
    assert interpreter.state is InterpreterState.STOP


async def test_a_worker_named_in_lower_case_is_found(tmp_path: Path) -> None:
    interpreter, _ = make(
        tmp_path, [call(DELEGATE, worker="thought", task="think"), "thought about it", "done"]
    )
    await interpreter.set_agent(AgentName.SUPERVISOR)
    _ = [e async for e in interpreter.chat("do it")]
    result = next(m for m in interpreter.session.history if m.role is Role.TOOL)
    assert result.content == "thought about it" and not result.metadata["is_error"]


async def test_a_worker_that_answers_through_task_complete_gives_its_summary_back(
    tmp_path: Path,
) -> None:
    interpreter, model = make(
        tmp_path,
        [
            call(DELEGATE, worker="AGENT_EXECUTOR", task="Work out 6*7."),
            call("task_complete", summary="6*7 is 42"),  # the worker's only reply
            "The answer is 42.",
        ],
    )
    assert isinstance(model, ScriptedModel)
    await interpreter.set_agent(AgentName.SUPERVISOR)
    _ = [e async for e in interpreter.chat("what is 6*7?")]
    history = interpreter.session.history
    answer = next(m for m in history if m.role is Role.TOOL and m.name == DELEGATE)
    assert "6*7 is 42" in answer.content and not answer.metadata["is_error"]
    supervisor_again = model.requests[-1].messages
    assert any(m.role is Role.TOOL and "6*7 is 42" in m.content for m in supervisor_again)
    assert interpreter.session.task_complete is None  # the worker's, not the supervisor's
    assert history[-1].content == "The answer is 42."


async def test_a_message_sent_while_a_worker_runs_is_read_before_the_next_delegation(
    tmp_path: Path,
) -> None:
    gate, reached = asyncio.Event(), asyncio.Event()
    told: list[list[str]] = []

    async def model(messages: list[Message], info: FunctionInfo) -> str | ModelResponse:
        if info.tools:  # the supervisor's calls: it has the delegate tool
            told.append([m.content for m in messages if m.role is Role.USER])
        if info.call_number == 1:
            return call(DELEGATE, worker="THOUGHT", task="Draft a poem.")
        if info.call_number == 2:  # the worker
            reached.set()
            await gate.wait()
            return "a poem"
        return "Understood: I will not publish it."

    interpreter, _ = make(tmp_path, FunctionModel(model))
    await interpreter.set_agent(AgentName.SUPERVISOR)
    async with asyncio.timeout(20):
        await interpreter.send("Draft a poem, then publish it.")
        await reached.wait()
        await interpreter.send("Do not publish it.")
        gate.set()
        await interpreter.wait_idle()
    assert told[1] == ["Draft a poem, then publish it.", "Do not publish it."]
    assert len(told) == 2  # one turn: the message was read in it, not queued after it
    history = interpreter.session.history
    assert [m.content for m in history if m.role is Role.USER and not m.display_only] == [
        "Draft a poem, then publish it.",
        "Do not publish it.",
    ]
    assert history[-1].content == "Understood: I will not publish it."
