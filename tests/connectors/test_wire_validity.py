"""Histories a session really builds must go out as requests the vendor accepts.

A request the vendor refuses is sent again with every later message, so each of these
would end the session for good. The rules are checked by `tests.connectors.wire_rules`;
the last tests run whole turns through the Interpreter against a local OpenAI-speaking peer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from connectors.anthropic_mapping import messages_to_anthropic
from connectors.openai import OpenAIProvider
from connectors.openai_mapping import messages_to_openai
from connectors.resilience import RetryPolicy
from connectors.wire_names import UNNAMED_TOOL, wire_id
from gui_agent.quick import create_interpreter
from gui_agent.tools import ToolOutput, tool
from schema import ImagePart, Message, PermissionMode, Role, RunOutcome, ToolCall
from tests.connectors.peers import (
    OPENAI_DONE,
    Reply,
    ScriptedPeer,
    openai_chunk,
    openai_text_stream,
)
from tests.connectors.wire_rules import alternation_problems, anthropic_problems, openai_problems
from tests.gui_agent.helpers import of_type

PNG = ImagePart(media_type="image/png", data="UE5H")


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


def calling(*calls: ToolCall) -> Message:
    return Message(role=Role.ASSISTANT, content="", tool_calls=calls)


def calling_with(text: str, *calls: ToolCall) -> Message:
    return Message(role=Role.ASSISTANT, content=text, tool_calls=calls)


def result(call: ToolCall, text: str = "done", **kwargs: object) -> Message:
    return Message(
        role=Role.TOOL,
        content=text,
        tool_call_id=call.id,
        name=call.name,
        **kwargs,
    )


def both_vendors(history: list[Message]) -> dict[str, list[str]]:
    _, anthropic = messages_to_anthropic(history, model="claude-test")
    return {
        "openai": openai_problems(messages_to_openai(history)),
        "anthropic": anthropic_problems(anthropic),
    }


# --- pure mapping ---------------------------------------------------------------------------


def test_parallel_results_with_images_keep_every_result_right_after_the_calls() -> None:
    shots = [ToolCall(id=f"call_{i}", name="screenshot", arguments="{}") for i in range(3)]
    history = [
        user("compare the three pages"),
        calling(*shots),
        *(result(c, f"page {i}", images=(PNG,)) for i, c in enumerate(shots)),
        user("which is best?"),
    ]
    wire = messages_to_openai(history)
    assert [m["role"] for m in wire] == ["user", "assistant", *["tool"] * 3, *["user"] * 4]
    assert all(
        part["image_url"]["url"].startswith("data:image/png")
        for m in wire[5:8]
        for part in m["content"]
        if part["type"] == "image_url"
    )
    assert both_vendors(history) == {"openai": [], "anthropic": []}


def test_user_turns_in_a_row_go_to_claude_as_one_valid_turn() -> None:
    call = ToolCall(id="call_1", name="screenshot", arguments="{}")
    history = [
        user("are you there?"),
        Message(role=Role.USER, content="look at this", images=(PNG,)),
        calling(call),
        result(call, "shot", images=(PNG,)),
        user("what does it show?"),
    ]
    _, sent = messages_to_anthropic(history, model="claude-test")
    assert anthropic_problems(sent) == []
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert [b["type"] for b in sent[0]["content"]] == ["text", "text", "image"]
    assert [b["type"] for b in sent[2]["content"]] == ["tool_result", "text"]


@pytest.mark.parametrize("blank", ["\n\n", " ", "\t\n "])
def test_a_reply_of_blank_text_before_its_call_goes_to_claude_without_it(blank: str) -> None:
    call = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Oslo"}')
    answered = Message(role=Role.ASSISTANT, content=blank)  # stopped, or said nothing
    history = [user("weather?"), calling_with(blank, call), result(call), answered, user("ok")]
    assert both_vendors(history) == {"openai": [], "anthropic": []}
    _, sent = messages_to_anthropic(history, model="claude-test")
    assert [b["type"] for b in sent[1]["content"]] == ["tool_use"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]


def test_a_worker_step_shown_between_a_call_and_its_result_does_not_split_the_results() -> None:
    first, second = (ToolCall(id=f"call_{i}", name="delegate", arguments="{}") for i in range(2))
    shown = {"display_only": True, "delegated_by": "call_1"}
    history = [
        user("split it"),
        calling(first, second),
        result(first, "A", images=(PNG,)),
        Message(role=Role.USER, content="task B", metadata=shown),
        Message(role=Role.ASSISTANT, content="B done", metadata=shown),
        result(second, "B"),
    ]
    assert both_vendors(history) == {"openai": [], "anthropic": []}


@pytest.mark.parametrize(
    "name", ["", "x" * 300], ids=["a call without a name", "a 300-character name"]
)
def test_a_call_by_a_name_no_vendor_takes_still_goes_out_valid(name: str) -> None:
    call = ToolCall(id="call_1", name=name, arguments="{}")
    history = [user("hi"), calling(call), result(call, f"Unknown tool {name!r}"), user("again")]
    assert both_vendors(history) == {"openai": [], "anthropic": []}
    if not name:
        wire = messages_to_openai(history)
        assert wire[1]["tool_calls"][0]["function"]["name"] == UNNAMED_TOOL


def test_call_ids_other_vendors_wrote_are_rewritten_consistently_and_stay_distinct() -> None:
    kimi = [ToolCall(id=f"functions.Bash:{i}", name="bash", arguments="{}") for i in range(2)]
    codex = ToolCall(id="call_" + "Q" * 24 + "|fc_" + "0f" * 30, name="bash", arguments="{}")
    calls = (*kimi, codex)
    history = [user("run"), calling(*calls), *(result(c) for c in calls), user("and now?")]
    assert both_vendors(history) == {"openai": [], "anthropic": []}
    _, wire = messages_to_anthropic(history, model="claude-test")
    ids = [b["id"] for b in wire[1]["content"]]
    assert len(set(ids)) == 3
    assert [b["tool_use_id"] for b in wire[2]["content"][:3]] == ids


def test_ids_and_names_the_vendor_takes_go_out_unchanged() -> None:
    assert wire_id("toolu_01A-b", max_chars=64, safe_chars=True) == "toolu_01A-b"
    call = ToolCall(id="call_abc", name="get_weather", arguments="{}")
    wire = messages_to_openai([user("hi"), calling(call), result(call)])
    assert wire[1]["tool_calls"][0]["id"] == "call_abc"
    assert wire[2]["tool_call_id"] == "call_abc"
    assert wire[1]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_rewritten_ids_differ_for_values_that_clean_up_the_same() -> None:
    one = wire_id("a:0", max_chars=64, safe_chars=True)
    other = wire_id("a|0", max_chars=64, safe_chars=True)
    assert one != other
    assert one == wire_id("a:0", max_chars=64, safe_chars=True)  # the same every request


# --- whole turns over HTTP ------------------------------------------------------------------


@tool
def screenshot(page: str) -> ToolOutput:
    """Take a screenshot of a page.

    Args:
        page: Which page.
    """
    return ToolOutput(content=f"shot of {page}", images=(PNG,))


@pytest.fixture
async def openai_model(peer: ScriptedPeer) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(
        "gpt-test", base_url=peer.url + "/v1", api_key="k", retry=RetryPolicy(max_attempts=1)
    )
    yield provider
    await provider.aclose()


def tool_call_stream(*calls: tuple[str, str, str]) -> Reply:
    pieces = [
        openai_chunk(
            {
                "tool_calls": [
                    {"index": i, "id": call_id, "type": "function", "function": function}
                    for i, (call_id, name, arguments) in enumerate(calls)
                    for function in [{"name": name, "arguments": arguments} if name else {}]
                ]
            }
        ),
        openai_chunk({}, finish_reason="tool_calls"),
        OPENAI_DONE,
    ]
    return Reply.sse(*pieces)


async def test_a_nameless_tool_call_does_not_break_the_session(
    peer: ScriptedPeer, openai_model: OpenAIProvider, tmp_path: Path
) -> None:
    interpreter = create_interpreter(openai_model, workdir=tmp_path)
    peer.script(
        tool_call_stream(("call_1", "", '{"x": 1}')),
        Reply.sse(*openai_text_stream(["Sorry, no such tool."])),
        Reply.sse(*openai_text_stream(["Hello again."])),
    )
    first = [e async for e in interpreter.chat("do it")]
    second = [e async for e in interpreter.chat("hi")]
    for events in (first, second):
        assert [e.outcome for e in of_type(events, "run_finished")] == [RunOutcome.COMPLETED]
    assert interpreter.session.history[-1].content == "Hello again."
    for seen in peer.requests[1:]:
        assert openai_problems(seen.body["messages"]) == []


async def test_two_screenshots_in_one_step_and_the_next_request_is_valid(
    peer: ScriptedPeer, openai_model: OpenAIProvider, tmp_path: Path
) -> None:
    interpreter = create_interpreter(
        openai_model,
        tools=[screenshot],
        workdir=tmp_path,
        permissions={"screenshot": PermissionMode.ALLOW},
    )
    peer.script(
        tool_call_stream(
            ("call_a", "screenshot", '{"page": "a"}'), ("call_b", "screenshot", '{"page": "b"}')
        ),
        Reply.sse(*openai_text_stream(["Page a is nicer."])),
    )
    events = [e async for e in interpreter.chat("compare pages a and b")]
    assert [e.outcome for e in of_type(events, "run_finished")] == [RunOutcome.COMPLETED]
    sent = peer.requests[1].body["messages"]
    assert openai_problems(sent) == []
    assert alternation_problems(sent) == []  # a local server: the two image turns are one
    assert [m["role"] for m in sent[-3:]] == ["tool", "tool", "user"]
    kinds = [part["type"] for part in sent[-1]["content"]]
    assert kinds == ["text", "image_url", "text", "image_url"]  # each label before its image


@tool
def shout(word: str) -> str:
    """Say a word loudly.

    Args:
        word: The word.
    """
    return word.upper()


async def test_two_calls_a_server_gave_one_id_each_get_their_own_result(
    peer: ScriptedPeer, openai_model: OpenAIProvider, tmp_path: Path
) -> None:
    interpreter = create_interpreter(openai_model, tools=[shout], workdir=tmp_path)
    peer.script(
        tool_call_stream(
            ("call_0", "shout", '{"word": "a"}'), ("call_0", "shout", '{"word": "b"}')
        ),
        Reply.sse(*openai_text_stream(["A and B."])),
    )
    events = [e async for e in interpreter.chat("shout a and b")]
    assert [e.outcome for e in of_type(events, "run_finished")] == [RunOutcome.COMPLETED]
    results = [m for m in interpreter.session.history if m.role is Role.TOOL]
    assert [m.content for m in results] == ["A", "B"]
    sent = peer.requests[1].body["messages"]
    (asked,) = [m for m in sent if m.get("tool_calls")]
    call_ids = [c["id"] for c in asked["tool_calls"]]
    assert len(set(call_ids)) == 2
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == call_ids
