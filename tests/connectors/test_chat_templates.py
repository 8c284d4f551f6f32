"""Conversations reach servers whose chat template is strict in a form it accepts: system
messages after the history (the planner's and supervisor's instructions) as part of a user
turn, and user messages in a row (a message sent again after a Stop, tool images followed by
a user turn) as one user turn.

Pure rewriting first, then whole turns through the Interpreter against a local
OpenAI-speaking peer, checking every request with `wire_rules`; then the embedded model's
mapping, which has the same rules.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from connectors.chat_templates import INSTRUCTION_LABEL, system_first_only, user_turns_merged
from connectors.llama_mapping import ToolPlan, plan_tool_use, to_chat_messages
from connectors.openai import OpenAIProvider
from connectors.openai_mapping import RequestOptions, build_request
from connectors.resilience import RetryPolicy
from gui_agent.agents.planner import planning_instruction
from gui_agent.agents.supervisor import DELEGATE, delegate
from gui_agent.quick import create_interpreter
from gui_agent.tools import ToolOutput, tool
from schema import (
    AgentName,
    ImagePart,
    Message,
    PermissionMode,
    Role,
    RunOutcome,
    ToolCall,
    ToolSchema,
)
from tests.connectors.peers import (
    OPENAI_DONE,
    Reply,
    ScriptedPeer,
    openai_chunk,
    openai_text_stream,
)
from tests.connectors.wire_rules import (
    alternation_problems,
    openai_problems,
    system_first_problems,
)
from tests.gui_agent.helpers import of_type

PLAN_STEP = "Greet the person"
PNG = ImagePart(media_type="image/png", data="UE5H")


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
    after_tool: list[dict[str, Any]] = [
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
    wire: list[dict[str, Any]] = [
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


IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,UE5H"}}


def test_user_turns_in_a_row_become_one_with_texts_a_blank_line_apart() -> None:
    wire = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "say hello"},
        {"role": "user", "content": "are you there?"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "bye"},
    ]
    assert user_turns_merged(wire) == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "say hello\n\nare you there?"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "bye"},
    ]
    assert wire[1] == {"role": "user", "content": "say hello"}  # the input is left alone


def test_merged_user_turns_keep_their_images_in_order() -> None:
    other = {"type": "image_url", "image_url": {"url": "https://example.net/b.png"}}
    wire: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "look"}, IMAGE]},
        {"role": "user", "content": "and this"},
        {"role": "user", "content": [other]},
        {"role": "user", "content": ""},
        {"role": "user", "content": [{"type": "text", "text": "which is nicer?"}]},
    ]
    (only,) = user_turns_merged(wire)
    assert only["content"] == [
        {"type": "text", "text": "look"},
        IMAGE,
        {"type": "text", "text": "and this"},
        other,
        {"type": "text", "text": "which is nicer?"},
    ]


def test_tool_images_followed_by_a_user_turn_go_as_one_user_turn() -> None:
    call = ToolCall(id="call_1", name="screenshot", arguments="{}")
    history = [
        user("take a screenshot"),
        Message(role=Role.ASSISTANT, tool_calls=(call,)),
        Message(
            role=Role.TOOL,
            content="shot",
            tool_call_id="call_1",
            name="screenshot",
            images=(ImagePart(media_type="image/png", data="UE5H"),),
        ),
        user("what does it show?"),
    ]
    options = RequestOptions(model="qwen", system_anywhere=False, consecutive_user_turns=False)
    sent = build_request(history, [], None, options)["messages"]
    assert alternation_problems(sent) == []
    assert openai_problems(sent) == []
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[-1]["content"] == [
        {"type": "text", "text": "Images returned by the tool screenshot:"},
        IMAGE,
        {"type": "text", "text": "what does it show?"},
    ]


def test_an_instruction_folded_after_user_turns_in_a_row_joins_the_one_turn() -> None:
    history = [user("hi"), user("hello?"), system("Plan first.")]
    options = RequestOptions(model="qwen", system_anywhere=False, consecutive_user_turns=False)
    (only,) = build_request(history, [], None, options)["messages"]
    assert only == {"role": "user", "content": "hi\n\nhello?\n\n" + folded("Plan first.")}


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
    assert provider.consecutive_user_turns is anywhere


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
        assert alternation_problems(messages) == []
        assert openai_problems(messages) == []
    return requests


def screenshot_call() -> Reply:
    call = {"index": 0, "id": "call_s", "type": "function"}
    call["function"] = {"name": "screenshot", "arguments": '{"page": "a"}'}
    return Reply.sse(
        openai_chunk({"tool_calls": [call]}),
        openai_chunk({}, finish_reason="tool_calls"),
        OPENAI_DONE,
    )


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
    assert [e.outcome for e in of_type(events, "run_finished")] == [RunOutcome.COMPLETED]
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
    assert [e.outcome for e in of_type(events, "run_finished")] == [RunOutcome.COMPLETED]
    first, worker, last = sent(peer)
    assert [m["role"] for m in first] == ["system", "user"]
    assert first[1]["content"].startswith("get a greeting\n\n" + INSTRUCTION_LABEL)
    assert worker[1:] == [{"role": "user", "content": "Say hi"}]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "user"]
    assert last[-1]["content"].startswith(INSTRUCTION_LABEL)
    assert interpreter.session.history[-1].content == "The worker said hi."


async def test_a_message_sent_again_after_a_stop_reaches_a_strict_template_acceptably(
    peer: ScriptedPeer, local_server: OpenAIProvider, tmp_path: Path
) -> None:
    interpreter = create_interpreter(local_server, builtin_tools=False, workdir=tmp_path)
    peer.script(Reply.silent(), Reply.sse(*openai_text_stream(["Yes, here."])))
    await interpreter.send("are you there?")
    assert await asyncio.to_thread(peer.received.wait, 10.0)
    assert await interpreter.stop() is True
    events = [e async for e in interpreter.chat("hello?")]
    assert [e.outcome for e in of_type(events, "run_finished")] == [RunOutcome.COMPLETED]
    _, again = sent(peer)  # `sent` checks both requests against the strict templates' rules
    assert again[1]["content"] == "are you there?"
    assert again[-1]["content"] == "hello?"
    assert [m.content for m in interpreter.session.history if m.role is Role.USER] == [
        "are you there?",
        "hello?",
    ]


async def test_a_message_sent_while_a_tool_ran_joins_its_images_in_one_user_turn(
    peer: ScriptedPeer, local_server: OpenAIProvider, tmp_path: Path
) -> None:
    started, release = asyncio.Event(), asyncio.Event()

    @tool
    async def screenshot(page: str) -> ToolOutput:
        """Take a screenshot of a page.

        Args:
            page: Which page.
        """
        started.set()
        await release.wait()
        return ToolOutput(content=f"shot of {page}", images=(PNG,))

    interpreter = create_interpreter(
        local_server,
        tools=[screenshot],
        builtin_tools=False,
        workdir=tmp_path,
        permissions={"screenshot": PermissionMode.ALLOW},
    )
    peer.script(screenshot_call(), Reply.sse(*openai_text_stream(["It is blue."])))
    async with interpreter.subscribe() as events:
        await interpreter.send("take a screenshot of page a")
        await started.wait()
        await interpreter.send("and tell me its colour")
        release.set()
        finished = [e async for e in events.until_idle() if e.type == "run_finished"]
    assert [e.outcome for e in finished] == [RunOutcome.COMPLETED]
    _, answer = sent(peer)
    assert [m["role"] for m in answer[-3:]] == ["assistant", "tool", "user"]
    texts = [part.get("text") for part in answer[-1]["content"]]
    assert texts == ["Images returned by the tool screenshot:", None, "and tell me its colour"]


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


def test_the_embedded_model_gets_user_turns_in_a_row_as_one() -> None:
    calls = (
        ToolCall(id="c1", name="get_weather", arguments='{"city": "Oslo"}'),
        ToolCall(id="c2", name="get_time", arguments="{}"),
    )
    messages = [
        user("weather and time in Oslo?"),
        Message(role=Role.ASSISTANT, tool_calls=calls),
        Message(role=Role.TOOL, content="4 C", tool_call_id="c1", name="get_weather"),
        Message(role=Role.TOOL, content="12:00", tool_call_id="c2", name="get_time"),
        user("and tomorrow?"),
    ]
    chat = to_chat_messages(messages)
    assert alternation_problems(chat) == []
    assert [m["role"] for m in chat] == ["user", "assistant", "user"]
    assert chat[-1]["content"] == (
        "Result of get_weather:\n4 C\n\nResult of get_time:\n12:00\n\nand tomorrow?"
    )
