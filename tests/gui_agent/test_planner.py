"""LLM_PLANNER: a plan from one model call without tools, then the executor runs each step."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from connectors.function import FunctionInfo, FunctionModel
from connectors.scripted import ScriptedModel, call
from gui_agent.agents import PlannerAgent
from gui_agent.agents.planner import parse_plan
from gui_agent.quick import create_interpreter
from schema import (
    AgentName,
    AutoChatSettings,
    InterpreterState,
    Message,
    MessageCompleted,
    ModelResponse,
    Role,
    RunFinished,
    RunOutcome,
    StateChanged,
    UsageReported,
)
from tests.gui_agent.helpers import make

PLAN = "Here is the plan:\n1. List the files in the folder.\n2. Say how many there are."


def test_plans_are_read_from_numbered_or_bulleted_lines() -> None:
    assert parse_plan(PLAN, 6) == ["List the files in the folder.", "Say how many there are."]
    assert parse_plan("- **look**\n* count\nthanks", 6) == ["look", "count"]
    assert parse_plan("Step 1: a\nStep 2) b", 6) == ["a", "b"]
    assert parse_plan("Just do it.", 6) == []
    steps = parse_plan("\n".join(f"{n}. s{n}" for n in range(1, 9)), 3)
    assert steps == ["s1", "s2", "s3; then s4; then s5; then s6; then s7; then s8"]


async def test_a_planned_turn_runs_each_step_with_tools_and_answers(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    interpreter, model = make(
        tmp_path, [PLAN, call("list_files"), "I listed them.", "There is 1 file."]
    )
    assert isinstance(model, ScriptedModel)
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    events = [e async for e in interpreter.chat("how many files are there?")]

    history = interpreter.session.history
    assert [(m.role, m.agent) for m in history] == [
        (Role.USER, None),
        (Role.ASSISTANT, AgentName.LLM_PLANNER),  # the plan
        (Role.USER, None),  # step 1
        (Role.ASSISTANT, AgentName.AGENT_EXECUTOR),  # list_files call
        (Role.TOOL, AgentName.AGENT_EXECUTOR),
        (Role.ASSISTANT, AgentName.AGENT_EXECUTOR),
        (Role.USER, None),  # step 2
        (Role.ASSISTANT, AgentName.AGENT_EXECUTOR),
    ]
    assert history[1].content == PLAN
    assert history[2].metadata["plan_step"] == 1 and history[6].metadata["plan_steps"] == 2
    assert "List the files" in history[2].content and "how many files" in history[2].content
    assert "last step" in history[6].content
    assert "a.txt" in history[4].content
    assert history[-1].content == "There is 1 file."

    planning = model.requests[0]
    assert planning.tools == ()  # planning never calls tools
    assert planning.messages[-1].role is Role.SYSTEM and "numbered" in planning.messages[-1].content
    assert all(r.tools for r in model.requests[1:])  # the steps do
    assert not any("numbered" in m.content for m in history)  # the instruction is not kept

    announced = [e.message.id for e in events if isinstance(e, MessageCompleted)]
    assert announced == [m.id for m in history]
    usage = [e for e in events if isinstance(e, UsageReported)]
    assert usage[-1].turn.requests == 4  # the turn's usage spans plan and steps
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert [f.outcome for f in finished] == [RunOutcome.COMPLETED]
    assert interpreter.state is InterpreterState.STOP


async def test_a_step_that_hits_a_limit_ends_the_plan_with_that_outcome(tmp_path: Path) -> None:
    interpreter, model = make(tmp_path, [PLAN, call("list_files"), call("list_files")])
    session = interpreter.session
    session.settings = session.settings.model_copy(update={"max_iterations": 1})
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    events = [e async for e in interpreter.chat("count the files")]
    (finished,) = [e for e in events if isinstance(e, RunFinished)]
    assert finished.outcome is RunOutcome.MAX_ITERATIONS
    steps = [m for m in session.history if m.metadata.get("plan_step")]
    assert len(steps) == 1  # step 2 never started
    assert isinstance(model, ScriptedModel) and model.remaining == 1


async def test_task_complete_in_a_step_ends_the_plan(tmp_path: Path) -> None:
    interpreter, _ = make(
        tmp_path, [PLAN, call("task_complete", summary="nothing to do"), "unused", "unused"]
    )
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    _ = [e async for e in interpreter.chat("count the files")]
    assert interpreter.session.task_complete == "nothing to do"
    assert len([m for m in interpreter.session.history if m.metadata.get("plan_step")]) == 1


async def test_an_unreadable_plan_becomes_one_step_and_retry_reruns_the_request(
    tmp_path: Path,
) -> None:
    interpreter, model = make(tmp_path, ["I will just answer.", "42", "plan again", "43"])
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    _ = [e async for e in interpreter.chat("what is six times seven?")]
    (step,) = [m for m in interpreter.session.history if m.metadata.get("plan_step")]
    assert step.metadata["step"] == "what is six times seven?"
    assert interpreter.session.history[-1].content == "42"
    await interpreter.retry()  # the person's message, not the generated step
    await interpreter.wait_idle()
    assert interpreter.session.history[0].content == "what is six times seven?"
    assert interpreter.session.history[-1].content == "43"
    assert isinstance(model, ScriptedModel) and model.remaining == 0


async def test_autochat_turns_run_with_the_planner_and_end_on_task_complete(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(
        tmp_path,
        ["1. look around", "looked", "1. finish", call("task_complete", summary="done")],
        autochat=AutoChatSettings(enabled=True, max_turns=5),
    )
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    events = [e async for e in interpreter.chat("tidy up")]
    runs = [
        e for e in events if isinstance(e, StateChanged) and e.to_state is InterpreterState.RUNNING
    ]
    assert len(runs) == 2
    assert events[-1].type == "autochat_stopped" and events[-1].reason.value == "task_complete"


def test_max_steps_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_steps"):
        PlannerAgent(max_steps=0)


def test_a_plan_of_over_a_hundred_steps_drops_none_of_them() -> None:
    plan = "\n".join(f"{n}. s{n}" for n in range(1, 121))
    steps = parse_plan(plan, 6)
    assert len(steps) == 6
    assert steps[-1].endswith("; then s119; then s120")
    assert "; then s100; then s101;" in steps[-1]


async def test_a_long_plan_runs_as_at_most_max_steps_and_the_history_stays_sendable(
    tmp_path: Path,
) -> None:
    plan = "\n".join(f"{n}. step {n}" for n in range(1, 101))
    model = ScriptedModel([plan, "one", "two", "three"])
    planner = PlannerAgent(max_steps=3)
    interpreter = create_interpreter(
        model, workdir=tmp_path, architectures={AgentName.LLM_PLANNER: planner}
    )
    events = [e async for e in interpreter.chat("do a hundred things")]
    assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.COMPLETED]
    steps = [m for m in interpreter.session.history if m.metadata.get("plan_step")]
    assert [m.metadata["plan_step"] for m in steps] == [1, 2, 3]
    assert "step 100" in steps[-1].content
    assert model.remaining == 0


async def test_a_step_that_hits_a_limit_is_named_with_the_steps_left_undone(
    tmp_path: Path,
) -> None:
    plan = "1. look around\n2. count the files\n3. report"
    interpreter, _ = make(tmp_path, [plan, "looked", call("list_files"), call("list_files")])
    session = interpreter.session
    session.settings = session.settings.model_copy(update={"max_iterations": 1})
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    events = [e async for e in interpreter.chat("tidy up")]
    (finished,) = [e for e in events if isinstance(e, RunFinished)]
    assert finished.outcome is RunOutcome.MAX_ITERATIONS
    assert finished.detail == (
        "plan step 2 of 3 (count the files) did not finish: stopped after 1 model call; "
        "step 3 was not run"
    )


async def _plan_with_a_message_meanwhile(
    tmp_path: Path, *, answer_in_step: bool
) -> tuple[list[str], list[str]]:
    """A three-step plan during which the person writes "do not publish": while step 1's
    model call runs (answer_in_step=False: it waits until step 1 is done) or while step 1
    is still calling tools (True: the executor takes it in during the step). Returns the
    plan steps that started and what each model call was last told by the person."""
    gate, reached = asyncio.Event(), asyncio.Event()
    seen: list[str] = []

    async def model(messages: list[Message], info: FunctionInfo) -> str | ModelResponse:
        seen.append(next(m.content for m in reversed(messages) if m.role is Role.USER))
        if info.call_number == 1:
            return "1. write a poem\n2. translate it\n3. publish it"
        if info.call_number == 2:
            reached.set()
            await gate.wait()
            return call("list_files") if answer_in_step else "poem written"
        return f"reply {info.call_number}"

    interpreter, _ = make(tmp_path, FunctionModel(model))
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    async with asyncio.timeout(20):
        await interpreter.send("a poem, translated and published")
        await reached.wait()
        await interpreter.send("Change of plan: do not publish it.")
        gate.set()
        await interpreter.wait_idle()
    history = interpreter.session.history
    return [str(m.metadata["step"]) for m in history if m.metadata.get("plan_step")], seen


async def test_a_message_waiting_when_a_step_ends_stops_the_plan_and_is_planned_anew(
    tmp_path: Path,
) -> None:
    steps, seen = await _plan_with_a_message_meanwhile(tmp_path, answer_in_step=False)
    assert "publish it" not in steps and "translate it" not in steps
    assert steps[0] == "write a poem"
    assert seen[2] == "Change of plan: do not publish it."  # the next turn's planning call
    assert not any("Do this step now: publish it" in told for told in seen)


async def test_a_message_taken_in_during_a_step_stops_the_plan_after_that_step(
    tmp_path: Path,
) -> None:
    steps, seen = await _plan_with_a_message_meanwhile(tmp_path, answer_in_step=True)
    assert steps == ["write a poem"]
    assert seen[-1] == "Change of plan: do not publish it."  # answered within step 1
    assert len(seen) == 3  # plan, step 1's tool call, step 1's answer: nothing more


async def test_an_autochat_turns_steps_carry_the_goal_not_the_continuation_prompt(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(
        tmp_path,
        ["1. look around", "looked", "1. finish up", "finished"],
        autochat=AutoChatSettings(enabled=True, max_turns=1),
    )
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    _ = [e async for e in interpreter.chat("tidy up the folder")]
    steps = [m for m in interpreter.session.history if m.metadata.get("plan_step")]
    assert len(steps) == 2
    continued = steps[1].content
    assert continued.startswith("Step 1 of 1 of the plan for: tidy up the folder\n")
    assert interpreter.session.autochat.continuation_prompt not in continued
