"""Defects found driving the agent roles from Python (hunt 9), each with its test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel, call, calls
from gui_agent.agents import CrewAgent, CrewMember
from gui_agent.agents.planner import parse_plan
from gui_agent.converter import RequestConverter
from gui_agent.quick import create_interpreter
from gui_agent.tools import tool
from schema import (
    AgentName,
    ApprovalRequested,
    ErrorEvent,
    Message,
    MessageStatus,
    ModelResponse,
    ModelSettings,
    ModelStreamPart,
    ModelTextDelta,
    Role,
    RunFinished,
    RunOutcome,
    ToolCall,
    ToolSchema,
)


@tool
def probe(x: int) -> str:
    """Check one thing.

    Args:
        x: What to check.
    """
    return f"probed {x}"


async def test_a_crew_member_with_tools_after_task_complete_still_answers(
    tmp_path: Path,
) -> None:
    # The doer declares the task done; the tester (tools too) must still see its own tool
    # result and say what it found, not be cut off after its first call.
    members = (
        CrewMember("doer", AgentName.AGENT_EXECUTOR, "Do: {request}", True),
        CrewMember("tester", AgentName.AGENT_EXECUTOR, "Test the work for: {request}", True),
        CrewMember("reviewer", AgentName.THOUGHT, "Review: {request}", False),
    )
    model = ScriptedModel(
        [call("task_complete", summary="built"), call("probe", x=1), "tests pass", "final"]
    )
    interpreter = create_interpreter(
        model,
        tools=[probe],
        architectures={AgentName.CREW: CrewAgent(members=members)},
        workdir=tmp_path,
    )
    [e async for e in interpreter.chat("build it")]

    history = interpreter.session.history
    replies = [m.content for m in history if m.role is Role.ASSISTANT and m.content]
    assert replies == ["tests pass", "final"]
    review = model.requests[-1].messages
    assert [m.content for m in review[-3:-1]] == ["probed 1", "tests pass"]
    assert interpreter.session.task_complete == "built"  # still ends AutoChat after this turn


@pytest.mark.parametrize(
    ("plan", "steps"),
    [
        # A bold lead-in, as models often write it: the step keeps its markdown whole.
        (
            "1. **Read the file**: open notes.txt\n2. **Count** the lines",
            ["**Read the file**: open notes.txt", "**Count** the lines"],
        ),
        ("1. `wc -l` the file\n2. Report it", ["`wc -l` the file", "Report it"]),
        ("1. **Read the file**\n2. _Count_", ["Read the file", "Count"]),
        # Sub-steps belong to their step; they are not steps of their own.
        (
            "1. Set up\n   1. make a folder\n   2. write a file\n2. Test it",
            ["Set up: make a folder; write a file", "Test it"],
        ),
        ("1) Read\n   - a.txt\n   - b.txt\n2) Sum", ["Read: a.txt; b.txt", "Sum"]),
        # A decimal number is not a step number.
        ("1.5 litres are needed.\n\nJust pour it.", []),
    ],
)
def test_a_plan_step_is_shown_as_the_planner_wrote_it(plan: str, steps: list[str]) -> None:
    assert parse_plan(plan, 6) == steps


async def test_the_first_crew_members_brief_reaches_the_model(tmp_path: Path) -> None:
    members = (
        CrewMember("auditor", AgentName.AGENT_EXECUTOR, "Audit for security: {request}", True),
        CrewMember("writer", AgentName.THOUGHT, "Write the report on: {request}", False),
    )
    model = ScriptedModel([call("probe", x=2), "no issues", "report"])
    interpreter = create_interpreter(
        model,
        tools=[probe],
        architectures={AgentName.CREW: CrewAgent(members=members)},
        workdir=tmp_path,
    )
    [e async for e in interpreter.chat("the login page")]

    auditor_calls = model.requests[:2]
    for request in auditor_calls:
        last = request.messages[-1]
        assert (last.role, last.content) == (Role.SYSTEM, "Audit for security: the login page")
    # an instruction for the call, not a message of the conversation
    assert all(m.role is not Role.SYSTEM for m in interpreter.session.history)
    assert model.requests[-1].messages[-1].content == "Write the report on: the login page"


@tool
async def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: The page.
    """
    download = asyncio.ensure_future(asyncio.sleep(3600))
    download.cancel()  # say, a library gave up on it
    await download
    return "never reached: the download was cancelled"


@pytest.mark.parametrize("parallel", [False, True])
async def test_a_tool_that_raises_cancelled_error_itself_is_not_a_stop(
    tmp_path: Path, parallel: bool
) -> None:
    first = (
        call("fetch", url="x")
        if not parallel
        else calls(("fetch", {"url": "x"}), ("probe", {"x": 1}))
    )
    model = ScriptedModel([first, "the fetch failed"])
    interpreter = create_interpreter(model, tools=[fetch, probe], workdir=tmp_path)
    events = [e async for e in interpreter.chat("get x")]

    finished = [e for e in events if isinstance(e, RunFinished)]
    assert [e.outcome for e in finished] == [RunOutcome.COMPLETED]
    results = {m.name: m for m in interpreter.session.history if m.role is Role.TOOL}
    assert results["fetch"].metadata["is_error"] is True
    assert "fetch raised CancelledError" in results["fetch"].content
    assert results["fetch"].status is MessageStatus.COMPLETE
    if parallel:
        assert results["probe"].content == "probed 1"
    assert interpreter.session.history[-1].content == "the fetch failed"


class DeltasOnly:
    """A provider of the developer's own that streams text but forgets the final response."""

    name = "mine"

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        return ModelResponse(text="unused")

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelStreamPart]:
        for word in ("Hello ", "there."):
            yield ModelTextDelta(text=word)


async def test_a_stream_without_its_final_response_keeps_what_streamed_and_says_why(
    tmp_path: Path,
) -> None:
    interpreter = create_interpreter(DeltasOnly(), workdir=tmp_path)
    events = [e async for e in interpreter.chat("hi")]

    reply = interpreter.session.history[-1]
    assert (reply.role, reply.content) == (Role.ASSISTANT, "Hello there.")  # was ""
    assert reply.status is MessageStatus.ERROR
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert errors and "ended without its final response" in errors[0].message
    assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.ERROR]


def test_code_blocks_in_two_languages_without_flags_stay_two_blocks() -> None:
    # An agent of the developer's own yields one chunk per code block, without start/end.
    chunks = [
        {"role": "assistant", "type": "code", "format": "python", "content": "print(1)"},
        {"role": "assistant", "type": "code", "format": "python", "content": "\nprint(2)"},
        {"role": "assistant", "type": "code", "format": "shell", "content": "ls"},
        {"role": "assistant", "type": "code", "content": " -l"},
    ]
    messages = RequestConverter().chunks_to_messages(chunks, agent=AgentName.OTHER)
    assert [(m.language, m.content) for m in messages] == [
        ("python", "print(1)\nprint(2)"),
        ("shell", "ls -l"),
    ]


async def test_a_supervisor_reads_delegate_and_task_complete_arguments_encoded_twice(
    tmp_path: Path,
) -> None:
    def twice(name: str, **arguments: object) -> ModelResponse:
        encoded = json.dumps(json.dumps(arguments))
        return ModelResponse(tool_calls=(ToolCall(id=f"c-{name}", name=name, arguments=encoded),))

    model = ScriptedModel(
        [
            twice("delegate", worker="THOUGHT", task="Say hi."),
            "hi",
            twice("task_complete", summary="Said hi."),
        ]
    )
    interpreter = create_interpreter(model, workdir=tmp_path, agent=AgentName.SUPERVISOR)
    [e async for e in interpreter.chat("greet")]

    results = [m for m in interpreter.session.history if m.role is Role.TOOL]
    assert [(m.name, m.content, m.metadata["is_error"]) for m in results] == [
        ("delegate", "hi", False),
        ("task_complete", "Task marked complete.", False),
    ]
    assert interpreter.session.task_complete == "Said hi."


async def test_a_call_cut_off_by_the_output_limit_is_explained_and_not_put_to_the_person(
    tmp_path: Path,
) -> None:
    cut = ModelResponse(
        tool_calls=(
            ToolCall(id="ok", name="probe", arguments='{"x": 3}'),
            ToolCall(
                id="cut", name="write_file", arguments='{"path": "big.py", "content": "for i in'
            ),
        ),
        finish_reason="length",
    )
    model = ScriptedModel([cut, "I will write it in parts."])
    interpreter = create_interpreter(model, tools=[probe], workdir=tmp_path)
    session = interpreter.session  # an approval nobody answers must not hang the test
    session.settings = session.settings.model_copy(update={"approval_timeout_s": 20.0})
    events = [e async for e in interpreter.chat("write a big file")]

    assert not [e for e in events if isinstance(e, ApprovalRequested)]  # write_file asks
    results = {m.tool_call_id: m for m in interpreter.session.history if m.role is Role.TOOL}
    assert results["ok"].content == "probed 3"  # a whole call of the same reply still runs
    cut_result = results["cut"]
    assert cut_result.metadata["is_error"] is True
    assert "output limit (max tokens)" in cut_result.content
    assert not (tmp_path / "big.py").exists()
    assert interpreter.session.history[-1].content == "I will write it in parts."
