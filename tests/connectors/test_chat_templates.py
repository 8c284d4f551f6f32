"""System messages after the history (the planner's and supervisor's instructions) reach
servers whose chat template takes a system message only first, as part of a user turn.

Pure rewriting first, then whole planner and supervisor turns through the Interpreter against
a local OpenAI-speaking peer, checking every request with `wire_rules`; then the embedded
model's mapping, which has the same rule.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from connectors.chat_templates import INSTRUCTION_LABEL, system_first_only
from connectors.llama_mapping import ToolPlan, plan_tool_use, to_chat_messages
from connectors.openai import OpenAIProvider
from connectors.openai_mapping import RequestOptions, build_request
from connectors.resilience import RetryPolicy
from gui_agent.agents.planner import planning_instruction
from gui_agent.agents.supervisor import DELEGATE, delegate
from gui_agent.quick import create_interpreter
from schema import AgentName, Message, Role, RunOutcome, ToolSchema
from tests.connectors.peers import (
    OPENAI_DONE,
    Reply,
    ScriptedPeer,
    openai_chunk,
    openai_text_stream,
)
from tests.connectors.wire_rules import openai_problems, system_first_problems
from tests.gui_agent.helpers import of_type

PLAN_STEP = "Greet the person"


def system(text: str) -> Message:
    return Message(role=Role.SYSTEM, content=text)


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


def assistant(text: str) -> Message:
    return Message(role=Role.ASSISTANT, content=text)


def folded(text: str) -> str:
    return f"{INSTRUCTION_LABEL}\n{text}"


# --- rewriting a conversation -------------------------------------------------------------


def test_an_instruction_after_a_user_message_joins_it_so_roles_still_alternate() -> None:
    wire = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "say hello"},
        {"role": "system", "content": "Plan first."},
    ]
    assert system_first_only(wire) == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "say hello\n\n" + folded("Plan first.")},
    ]
    assert wire[1] == {"role": "user", "content": "say hello"}  # the input is left alone


def test_an_instruction_after_an_answer_or_a_tool_result_is_a_user_turn_of_its_own() -> None:
    after_tool = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c"}]},
        {"role": "tool", "tool_call_id": "c", "content": "42"},
        {"role": "system", "content": "Answer now."},
    ]
    assert system_first_only(after_tool)[-1] == {"role": "user", "content": folded("Answer now.")}
    after_answer = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello"}]
    rewritten = system_first_only([*after_answer, {"role": "system", "content": "Go on."}])
    assert [m["role"] for m in rewritten] == ["user", "assistant", "user"]


def test_leading_system_messages_become_one_and_empty_instructions_are_dropped() -> None:
    wire = [
        {"role": "system", "content": "Be terse."},
        {"role": "system", "content": "Today is Monday."},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": ""},
    ]
    assert system_first_only(wire) == [
        {"role": "system", "content": "Be terse.\n\nToday is Monday."},
        {"role": "user", "content": "hi"},
    ]


def test_an_instruction_after_a_message_with_images_is_added_as_a_text_part() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,UE5H"}}
    wire = [
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]},
        {"role": "system", "content": "Describe it."},
    ]
    (only,) = system_first_only(wire)
    assert only["content"][-1] == {"type": "text", "text": folded("Describe it.")}
    assert only["content"][1] == image


def test_requests_fold_instructions_only_when_the_server_needs_it() -> None:
    history = [system("Be terse."), user("say hello"), system("Plan first.")]
    anywhere = build_request(history, [], None, RequestOptions(model="gpt-4o"))
    assert [m["role"] for m in anywhere["messages"]] == ["system", "user", "system"]
    first_only = RequestOptions(model="qwen", system_anywhere=False)
    sent = build_request(history, [], None, first_only)["messages"]
    assert system_first_problems(sent) == []
    assert sent[-1]["content"].endswith(folded("Plan first."))


@pytest.mark.parametrize(
    ("base_url", "anywhere"),
    [
        (None, True),
        ("https://api.openai.com/v1", True),
        ("http://127.0.0.1:8080/v1", False),
        ("https://openrouter.ai/api/v1", False),
    ],
)
def test_only_the_openai_service_gets_system_messages_anywhere(
    base_url: str | None, anywhere: bool
) -> None:
    provider = OpenAIProvider("m", api_key="sk-test", base_url=base_url)
    assert provider.system_anywhere is anywhere


# --- whole turns against a local server ---------------------------------------------------


@pytest.fixture
async def local_server(peer: ScriptedPeer) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(
        "qwen3", base_url=peer.url + "/v1", api_key="k", retry=RetryPolicy(max_attempts=1)
    )
    yield provider
    await provider.aclose()


def sent(peer: ScriptedPeer) -> list[list[dict[str, Any]]]:
    """The messages of every request, each checked against what local templates refuse."""
    requests = [seen.body["messages"] for seen in peer.requests]
    for messages in requests:
        assert system_first_problems(messages) == []
        assert openai_problems(messages) == []
    return requests


def delegating(worker: str, task: str) -> Reply:
    arguments = f'{{"worker": "{worker}", "task": "{task}"}}'
    call = {"index": 0, "id": "call_d", "type": "function"}
    call["function"] = {"name": DELEGATE, "arguments": arguments}
    return Reply.sse(
        openai_chunk({"tool_calls": [call]}),
        openai_chunk({}, finish_reason="tool_calls"),
        OPENAI_DONE,
    )


async def test_a_planner_turn_sends_its_instruction_inside_the_user_turn(
    peer: ScriptedPeer, local_server: OpenAIProvider, tmp_path: Path
) -> None:
    interpreter = create_interpreter(
        local_server,
        agent=AgentName.LLM_PLANNER,
        system_prompt="You are terse.",
        builtin_tools=False,
        workdir=tmp_path,
    )
    peer.script(
        Reply.sse(*openai_text_stream([f"1. {PLAN_STEP}"])),
        Reply.sse(*openai_text_stream(["Hello!"])),
    )
    events = [e async for e in interpreter.chat("say hello")]
    assert [e.outcome for e in of_type(events, "run_finished")] == [RunOutcome.COMPLETED]  # type: ignore[attr-defined]
    assert not of_type(events, "error")
    planning, step = sent(peer)
    assert planning == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "say hello\n\n" + folded(planning_instruction(6))},
    ]
    assert [m["role"] for m in step] == ["system", "user", "assistant", "user"]
    assert PLAN_STEP in step[-1]["content"]
    assert interpreter.session.history[-1].content == "Hello!"
    assert all(m.role is not Role.SYSTEM for m in interpreter.session.history)


async def test_a_supervisor_turn_sends_its_instruction_after_the_workers_answer(
    peer: ScriptedPeer, local_server: OpenAIProvider, tmp_path: Path
) -> None:
    interpreter = create_interpreter(
        local_server, agent=AgentName.SUPERVISOR, builtin_tools=False, workdir=tmp_path
    )
    peer.script(
        delegating("AGENT_EXECUTOR", "Say hi"),
        Reply.sse(*openai_text_stream(["hi"])),
        Reply.sse(*openai_text_stream(["The worker said hi."])),
    )
    events = [e async for e in interpreter.chat("get a greeting")]
    assert [e.outcome for e in of_type(events, "run_finished")] == [RunOutcome.COMPLETED]  # type: ignore[attr-defined]
    first, worker, last = sent(peer)
    assert [m["role"] for m in first] == ["system", "user"]
    assert first[1]["content"].startswith("get a greeting\n\n" + INSTRUCTION_LABEL)
    assert worker[1:] == [{"role": "user", "content": "Say hi"}]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "user"]
    assert last[-1]["content"].startswith(INSTRUCTION_LABEL)
    assert interpreter.session.history[-1].content == "The worker said hi."


# --- the embedded model -------------------------------------------------------------------


def test_the_embedded_model_gets_instructions_inside_the_user_turn() -> None:
    messages = [system("Be brief."), user("say hello"), system("Plan first.")]
    chat = to_chat_messages(messages, system_extra="Reply in JSON.")
    assert chat == [
        {"role": "system", "content": "Be brief.\n\nReply in JSON."},
        {"role": "user", "content": "say hello\n\n" + folded("Plan first.")},
    ]
    assert system_first_problems(chat) == []


def test_the_embedded_supervisor_is_offered_its_delegate_tool() -> None:
    schema = delegate.schema
    tools = [schema, ToolSchema(name="get_weather", description="Weather for a city")]
    instruction = "Hand each task to a worker with the delegate tool."
    plan = plan_tool_use([user("get a greeting"), system(instruction)], tools, "auto")
    assert plan == ToolPlan((schema,), allow_answer=True)
    after_result = [user("hi"), assistant("done"), system(instruction)]
    assert plan_tool_use(after_result, tools, "auto") == ToolPlan((), allow_answer=True)
