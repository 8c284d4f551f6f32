"""Roles given a careless model: plans written as JSON or markdown headings, delegate calls
with broken arguments, and a no-tools role that asks for tools anyway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel, call
from gui_agent.agents.planner import parse_plan
from schema import AgentName, ModelResponse, Role, ToolCall
from tests.gui_agent.helpers import make

JSON_PLAN = '```json\n{"steps": [{"id": 1, "description": "List the files."}, "Count them."]}\n```'


@pytest.mark.parametrize(
    "plan",
    [
        JSON_PLAN,
        '["List the files.", "Count them."]',
        "## Step 1: List the files.\n\nSome detail.\n\n## Step 2: Count them.",
        "**Step 1:** List the files.\n**Step 2:** Count them.",
    ],
)
def test_a_plan_in_json_or_markdown_headings_is_read_step_by_step(plan: str) -> None:
    assert parse_plan(plan, 6) == ["List the files.", "Count them."]


def test_json_that_is_not_a_list_of_steps_is_no_plan() -> None:
    assert parse_plan('{"answer": 42}', 6) == []
    assert parse_plan("[1, 2]", 6) == []


async def test_a_json_plan_runs_as_its_steps(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, [JSON_PLAN, "There is a.txt.", "One file."])
    await interpreter.set_agent(AgentName.LLM_PLANNER)

    [_ async for _ in interpreter.chat("how many files?")]

    steps = [m for m in interpreter.session.history if m.metadata.get("plan_step")]
    assert [m.metadata["step"] for m in steps] == ["List the files.", "Count them."]
    assert interpreter.session.history[-1].content == "One file."


def delegate(call_id: str, arguments: str) -> ToolCall:
    return ToolCall(id=call_id, name="delegate", arguments=arguments)


async def test_a_delegate_call_with_broken_arguments_is_told_what_is_wrong(
    tmp_path: Path,
) -> None:
    broken = (
        delegate("not_json", '{"worker": "THOUGHT", "task": '),
        delegate("a_list", '["THOUGHT", "say hi"]'),
        delegate("no_worker", '{"task": "say hi"}'),
        delegate("task_object", '{"worker": "THOUGHT", "task": {"text": "say hi"}}'),
    )
    interpreter, model = make(tmp_path, [ModelResponse(tool_calls=broken), "Sorry."])
    assert isinstance(model, ScriptedModel)
    await interpreter.set_agent(AgentName.SUPERVISOR)

    events = [e async for e in interpreter.chat("say hi")]

    results = {e.result.call_id: e.result for e in events if e.type == "tool_call_finished"}
    assert all(result.is_error for result in results.values())
    assert "not valid JSON" in results["not_json"].content
    assert "must be a JSON object, not list" in results["a_list"].content
    assert "say which worker" in results["no_worker"].content
    assert "`task` must be text, not dict" in results["task_object"].content
    # the supervisor's next call sees each reason, and the turn ends normally
    told = [m.content for m in model.requests[1].messages if m.role is Role.TOOL]
    assert told == [results[c.id].content for c in broken]
    assert [e.outcome.value for e in events if e.type == "run_finished"] == ["completed"]


async def test_a_no_tools_role_asking_for_a_tool_says_so_instead_of_an_empty_reply(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path, [call("run_python", code="print(2 + 2)")])
    await interpreter.set_agent(AgentName.THOUGHT)

    events = [e async for e in interpreter.chat("what is 2 + 2?")]

    reply = interpreter.session.history[-1]
    assert reply.role is Role.ASSISTANT and not reply.tool_calls
    assert reply.content.strip()
    assert "run_python" in reply.content and "no tools" in reply.content
    assert reply.metadata["ignored_tool_calls"] == ["run_python"]
    assert not [e for e in events if e.type == "tool_call_started"]
    assert json.loads(reply.model_dump_json())["content"] == reply.content
