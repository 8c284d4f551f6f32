"""Defects users of real servers hit, found in the eleventh connector hunt.

- Roles that offer no tools (the crew's reviewer, the planner's planning call after a turn
  that used tools, the thought role after the executor) send the conversation with its
  tool calls and results. Anthropic refuses that: "Requests which include `tool_use` or
  `tool_result` blocks must define tools" (HTTP 400), so every crew turn that used a tool
  failed at the review. Now a request without tools tells the history's calls and results
  in words. OpenAI-compatible gateways in front of Bedrock or Anthropic refuse it too
  ("The toolConfig field must be defined when using toolUse and toolResult content
  blocks"); those get the same, once they refused it, and the provider remembers.
- A llama.cpp server loading a large model answers 503 "Loading model" for minutes; it
  was asked four times within 3.5 s and the message failed, and the startup probe passed
  it over. Now a loading server is waited for, up to the model timeout
  (``GUI_AGENT_MODEL_TIMEOUT``), the error says the server is still loading the model
  when it gives up, and the probe offers the server.
- A reply with neither text nor tool calls (Stop pressed before the first word, a thinking
  model that ran out of tokens while thinking) stays in the history as an empty assistant
  message. Mistral's API, and vLLM serving a Mistral model, refuse that ("Assistant
  message must have either content or tool_calls, but not none"): every later message of
  the session failed. Now such a server gets the history without them, and the provider
  remembers.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from connectors.anthropic import AnthropicProvider
from connectors.anthropic_mapping import RequestOptions, build_request
from connectors.openai import OpenAIProvider
from connectors.registry import LOADING_MODEL_NAME, LocalServer, probe_local_servers
from connectors.resilience import LOADING_MAX_DELAY_S, BreakerState, RetryPolicy
from gui_agent.exceptions import ModelError, ModelServerError
from schema import (
    AgentName,
    ImagePart,
    Message,
    MessageType,
    Role,
    RunFinished,
    RunOutcome,
    ToolCall,
    ToolSchema,
)
from tests.connectors.peers import (
    Reply,
    ScriptedPeer,
    Seen,
    Sleeps,
    anthropic_block,
    anthropic_end,
    anthropic_error,
    anthropic_start,
    anthropic_text_stream,
    openai_chunk,
    openai_text_stream,
)
from tests.connectors.wire_rules import (
    ANTHROPIC_TOOLS_UNDEFINED,
    MISTRAL_EMPTY_ASSISTANT,
    alternation_problems,
    anthropic_problems,
    anthropic_tools_problem,
    mistral_problems,
    openai_problems,
    openai_tools_problem,
)
from tests.gui_agent.helpers import make

WEATHER = ToolSchema(name="get_weather", description="The weather in a city")

# --- requests without tools, history with tool calls ----------------------------------------


def refuse_like_anthropic(seen: Seen) -> Reply | None:
    """Anthropic's validation of a tool-less request (and its other rules on messages)."""
    problem = anthropic_tools_problem(seen.body)
    if problem is None and (problems := anthropic_problems(seen.body["messages"])):
        problem = "; ".join(problems)
    if problem is None:
        return None
    return Reply.json(400, anthropic_error("invalid_request_error", problem))


def refuse_like_a_bedrock_gateway(seen: Seen) -> Reply | None:
    """An OpenAI-compatible gateway in front of Bedrock (FastAPI's ``detail``)."""
    problem = openai_tools_problem(seen.body)
    if problem is None:
        return None
    return Reply.json(400, {"detail": f"An error occurred (ValidationException): {problem}"})


def tool_use_stream(call_id: str, name: str, arguments: str) -> tuple[bytes, ...]:
    return (
        anthropic_start(),
        *anthropic_block(
            0,
            {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            [{"type": "input_json_delta", "partial_json": arguments}],
        ),
        *anthropic_end("tool_use"),
    )


def texts_of(body: dict[str, Any]) -> str:
    """Every text the request's messages carry, in order."""
    return "\n".join(
        block["text"]
        for message in body["messages"]
        for block in (message["content"] if isinstance(message["content"], list) else ())
        if block.get("type") == "text"
    )


def block_types(body: dict[str, Any]) -> set[str]:
    return {
        block["type"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
    }


def tool_turn() -> list[Message]:
    """A turn that used tools: two parallel calls, one failed, one returned an image."""
    calls = (
        ToolCall(id="toolu_01", name="get_weather", arguments='{"city": "Rome"}'),
        ToolCall(id="functions.plot:1", name="plot", arguments='{"days": '),  # truncated
    )
    return [
        Message(role=Role.SYSTEM, content="Plan the next steps."),
        Message(role=Role.USER, content="Weather in Rome, and plot it?"),
        Message(
            role=Role.ASSISTANT,
            content="Checking.",
            tool_calls=calls,
            metadata={
                "provider_data": {
                    "anthropic": {
                        "model": "claude-test",
                        "thinking": [{"type": "thinking", "thinking": "hm", "signature": "sig"}],
                    }
                }
            },
        ),
        Message(
            role=Role.TOOL,
            type=MessageType.FUNCTION,
            content="21 C, sunny",
            tool_call_id="toolu_01",
            name="get_weather",
            metadata={"is_error": False},
        ),
        Message(
            role=Role.TOOL,
            type=MessageType.IMAGE,
            content="",
            tool_call_id="functions.plot:1",
            images=(ImagePart(media_type="image/png", data="iVBORw0KGgo="),),
            metadata={"is_error": True},
        ),
        Message(role=Role.ASSISTANT, content="It is 21 C and sunny in Rome."),
        Message(role=Role.USER, content="Now plan what is left."),
    ]


@pytest.fixture
async def claude(peer: ScriptedPeer, fast_retry: RetryPolicy) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider(
        "claude-test", base_url=peer.url, api_key="sk-ant-test", retry=fast_retry
    )
    yield provider
    await provider.aclose()


async def test_a_crew_review_after_a_tool_turn_is_not_refused_for_want_of_tools(
    peer: ScriptedPeer, claude: AnthropicProvider, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("x")
    peer.refuse_when(refuse_like_anthropic)
    peer.script(
        Reply.sse(*tool_use_stream("toolu_ls", "list_files", "{}")),
        Reply.sse(*anthropic_text_stream(["There is notes.txt."])),
        Reply.sse(*anthropic_text_stream(["Checked: ", "the folder holds notes.txt."])),
    )
    interpreter, _ = make(tmp_path, claude)
    await interpreter.set_agent(AgentName.CREW)
    events = [e async for e in interpreter.chat("what is in the folder?")]

    assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.COMPLETED]
    assert interpreter.session.history[-1].content == "Checked: the folder holds notes.txt."
    doer, _, review = (seen.body for seen in peer.requests)
    assert doer["tools"] and "tools" not in review  # the reviewer still offers no tools
    assert not block_types(review) & {"tool_use", "tool_result"}
    told = texts_of(review)  # the reviewer reads what the doer did, and what it got
    assert "[called the tool list_files (call toolu_ls) with {}]" in told
    assert "[the tool list_files (call toolu_ls) returned:]\nnotes.txt" in told


async def test_a_planning_request_tells_the_tool_turn_in_words(
    peer: ScriptedPeer, claude: AnthropicProvider
) -> None:
    peer.refuse_when(refuse_like_anthropic)
    peer.script(Reply.sse(*anthropic_text_stream(["1. Nothing left."])))
    history = tool_turn()
    before = [m.model_dump() for m in history]

    reply = await claude.generate(history, tools=())

    assert reply.text == "1. Nothing left."
    assert [m.model_dump() for m in history] == before  # the history is left as it was
    (seen,) = peer.requests
    body = seen.body
    assert "tools" not in body and body["system"] == "Plan the next steps."
    assert [m["role"] for m in body["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert body["messages"][1]["content"] == [
        {
            "type": "text",
            "text": "Checking.\n\n"
            '[called the tool get_weather (call toolu_01) with {"city": "Rome"}]\n\n'
            '[called the tool plot (call functions.plot:1) with {"days": ]',
        }
    ]  # no signed thinking: it went with the calls as issued
    results = body["messages"][2]["content"]
    assert results[0] == {
        "type": "text",
        "text": "[the tool get_weather (call toolu_01) returned:]\n21 C, sunny",
    }
    assert results[1] == {
        "type": "text",
        "text": "[the tool plot (call functions.plot:1) failed:]\n(the images below)",
    }
    assert results[2]["type"] == "image"
    assert results[3:] == []
    assert body["messages"][4]["content"] == [{"type": "text", "text": "Now plan what is left."}]
    options = RequestOptions(model="claude-test")
    again = build_request(history, (), None, options)
    assert again == build_request(history, (), None, options)  # deterministic
    assert again["messages"] == body["messages"]


async def test_with_tools_the_history_keeps_its_tool_blocks(
    peer: ScriptedPeer, claude: AnthropicProvider
) -> None:
    peer.refuse_when(refuse_like_anthropic)
    peer.script(Reply.sse(*anthropic_text_stream(["ok"])))
    await claude.generate(tool_turn(), tools=[WEATHER])
    body = peer.requests[0].body
    assert {"tool_use", "tool_result", "thinking"} <= block_types(body)
    assert ANTHROPIC_TOOLS_UNDEFINED not in texts_of(body)


@pytest.fixture
async def gateway(peer: ScriptedPeer, fast_retry: RetryPolicy) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider("claude-via-bedrock", base_url=f"{peer.url}/v1", retry=fast_retry)
    yield provider
    await provider.aclose()


async def test_a_gateway_that_wants_tools_defined_gets_the_tool_turn_in_words_and_is_remembered(
    peer: ScriptedPeer, gateway: OpenAIProvider
) -> None:
    peer.refuse_when(refuse_like_a_bedrock_gateway)
    peer.script(
        Reply.sse(*openai_text_stream(["Planned."])),
        Reply.sse(*openai_text_stream(["Planned again."])),
        Reply.sse(*openai_text_stream(["With tools."])),
    )
    history = tool_turn()

    assert (await gateway.generate(history, tools=())).text == "Planned."
    refused, told = (seen.body for seen in peer.requests)
    assert any(m["role"] == "tool" for m in refused["messages"])  # sent as they were first
    assert gateway.tool_history_refused
    assert not any(m["role"] == "tool" or m.get("tool_calls") for m in told["messages"])
    words = "\n".join(str(m["content"]) for m in told["messages"])
    assert '[called the tool get_weather (call toolu_01) with {"city": "Rome"}]' in words
    assert "[the tool get_weather (call toolu_01) returned:]\\n21 C, sunny" in words
    assert openai_problems(told["messages"]) == []

    assert (await gateway.generate(history, tools=())).text == "Planned again."
    assert peer.request_count == 3  # remembered: no refusal first
    assert (await gateway.generate(history, tools=[WEATHER])).text == "With tools."
    with_tools = peer.requests[-1].body
    assert with_tools["tools"] and any(m["role"] == "tool" for m in with_tools["messages"])


async def test_a_server_that_takes_tool_messages_without_tools_gets_them_as_they_are(
    peer: ScriptedPeer, gateway: OpenAIProvider
) -> None:
    peer.script(Reply.sse(*openai_text_stream(["Planned."])))
    await gateway.generate(tool_turn(), tools=())
    (seen,) = peer.requests
    assert [m["role"] for m in seen.body["messages"]].count("tool") == 2
    assert not gateway.tool_history_refused


async def test_a_refusal_about_something_else_is_not_taken_for_one_about_tools(
    peer: ScriptedPeer, gateway: OpenAIProvider
) -> None:
    peer.script(*[Reply.json(400, {"error": {"message": "messages: too long", "type": "x"}})] * 2)
    with pytest.raises(ModelError, match="too long"):
        await gateway.generate(tool_turn(), tools=())
    assert not gateway.tool_history_refused
    for seen in peer.requests:  # the first, and the one without stream_options
        assert [m["role"] for m in seen.body["messages"]].count("tool") == 2


# --- a server still loading its model ------------------------------------------------------

LOADING = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}
"""llama.cpp server's answer to every request while it loads the weights."""


async def test_a_llama_server_loading_its_model_is_waited_for_until_it_answers(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps
) -> None:
    peer.script(
        *[Reply.json(503, LOADING)] * 9,
        Reply.sse(*openai_text_stream(["Hello", " there"], usage=(5, 2))),
    )
    async with OpenAIProvider("qwen", base_url=f"{peer.url}/v1", retry=fast_retry) as provider:
        reply = await provider.generate([Message(role=Role.USER, content="hi")])
        assert reply.text == "Hello there"
        assert peer.request_count == 10  # more than the four attempts of a server error
        assert sleeps.delays == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 5.0, 5.0]
        assert max(sleeps.delays) <= LOADING_MAX_DELAY_S
        assert provider.breaker.state is BreakerState.CLOSED  # loading is no failure


async def test_a_model_still_loading_after_the_model_timeout_says_so(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps
) -> None:
    peer.script(*[Reply.json(503, LOADING)] * 40)
    async with OpenAIProvider(
        "qwen",
        base_url=f"{peer.url}/v1",
        retry=fast_retry,
        timeout_s=20.0,
        timeout_setting="GUI_AGENT_MODEL_TIMEOUT",
    ) as provider:
        with pytest.raises(ModelServerError) as caught:
            await provider.generate([Message(role=Role.USER, content="hi")])
    said = str(caught.value)
    assert "the server is still loading the model" in said
    assert "waited 20 s" in said and "GUI_AGENT_MODEL_TIMEOUT" in said
    assert "Loading model" in said
    assert sum(sleeps.delays) == pytest.approx(20.0)
    assert peer.request_count == len(sleeps.delays) + 1 < 40


async def test_stop_while_waiting_for_a_loading_model_ends_at_once(peer: ScriptedPeer) -> None:
    peer.script(*[Reply.json(503, LOADING)] * 3)
    slow = RetryPolicy(base_delay_s=30.0, jitter=False)  # real waits, far longer than the test
    async with OpenAIProvider("qwen", base_url=f"{peer.url}/v1", retry=slow) as provider:
        task = asyncio.create_task(provider.generate([Message(role=Role.USER, content="hi")]))
        assert await asyncio.to_thread(peer.received.wait, 10.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5.0)
        assert peer.request_count == 1
        assert provider.breaker.state is BreakerState.CLOSED


async def test_a_loading_reply_after_part_of_a_stream_is_not_asked_again(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps
) -> None:
    """An error object mid-stream is no answer to wait on: what was shown stays once."""
    peer.script(
        Reply.sse(
            openai_chunk({"role": "assistant", "content": "Hel"}),
            b'data: {"error": {"code": 503, "message": "Loading model"}}\n\n',
        )
    )
    async with OpenAIProvider("qwen", base_url=f"{peer.url}/v1", retry=fast_retry) as provider:
        with pytest.raises(ModelServerError):
            await provider.generate([Message(role=Role.USER, content="hi")])
    assert peer.request_count == 1 and sleeps.delays == []


async def test_claude_compatible_llama_server_loading_its_model_is_waited_for(
    peer: ScriptedPeer, claude: AnthropicProvider, sleeps: Sleeps
) -> None:
    peer.script(*[Reply.json(503, LOADING)] * 6, Reply.sse(*anthropic_text_stream(["Ready."])))
    reply = await claude.generate([Message(role=Role.USER, content="hi")])
    assert reply.text == "Ready."
    assert peer.request_count == 7 and peer.requests[0].path == "/v1/messages"


async def test_an_ordinary_503_is_still_retried_only_four_times(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps
) -> None:
    busy = {"error": {"code": 503, "message": "no slot available", "type": "unavailable_error"}}
    peer.script(*[Reply.json(503, busy)] * 6)
    async with OpenAIProvider("qwen", base_url=f"{peer.url}/v1", retry=fast_retry) as provider:
        with pytest.raises(ModelServerError) as caught:
            await provider.generate([Message(role=Role.USER, content="hi")])
    assert "still loading" not in str(caught.value)
    assert peer.request_count == 4


async def test_the_probe_offers_a_llama_server_that_is_still_loading(
    peer: ScriptedPeer,
) -> None:
    peer.script(Reply.json(503, LOADING))
    (spec,) = await probe_local_servers([LocalServer("llama.cpp server", peer.port)])
    assert spec.base_url == f"http://127.0.0.1:{peer.port}/v1"
    assert spec.model == LOADING_MODEL_NAME
    assert "still loading its model" in spec.source
    assert [seen.path for seen in peer.requests] == ["/v1/models"]


# --- empty replies, to a server that refuses them --------------------------------------------

VLLM_MISTRAL_EMPTY = (
    "Invalid assistant message: role='assistant' content=None tool_calls=None prefix=False"
)


def refuse_like_mistral(words: str) -> Any:
    def rule(seen: Seen) -> Reply | None:
        if not mistral_problems(seen.body["messages"]):
            return None
        body = {"object": "error", "message": words, "type": "invalid_request_message_error"}
        return Reply.json(400, {**body, "param": None, "code": None})

    return rule


@pytest.mark.parametrize(
    "words", [MISTRAL_EMPTY_ASSISTANT, VLLM_MISTRAL_EMPTY], ids=["api", "vllm"]
)
async def test_a_reply_that_ran_out_while_thinking_does_not_stick_a_mistral_session(
    peer: ScriptedPeer, fast_retry: RetryPolicy, tmp_path: Path, words: str
) -> None:
    peer.refuse_when(refuse_like_mistral(words))
    peer.script(
        Reply.sse(
            openai_chunk({"role": "assistant", "reasoning_content": "Let me think about"}),
            openai_chunk({}, finish_reason="length"),
        ),
        Reply.sse(*openai_text_stream(["Hello!"])),
        Reply.sse(*openai_text_stream(["Still here."])),
    )
    provider = OpenAIProvider("mistral-small", base_url=f"{peer.url}/v1", retry=fast_retry)
    async with provider:
        interpreter, _ = make(tmp_path, provider)
        first = [e async for e in interpreter.chat("hi")]
        assert interpreter.session.history[-1].content == ""  # kept: the person saw it think
        second = [e async for e in interpreter.chat("are you there?")]
        third = [e async for e in interpreter.chat("and now?")]

    for events in (first, second, third):
        assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.COMPLETED]
    assert interpreter.session.history[-1].content == "Still here."
    assert provider.empty_replies_refused
    bodies = [seen.body for seen in peer.requests]
    assert len(bodies) == 4  # the second message was refused once; the third went at once
    for body in (bodies[2], bodies[3]):
        assert mistral_problems(body["messages"]) == []
        assert alternation_problems(body["messages"]) == []
    assert bodies[2]["messages"][-1]["content"] == "hi\n\nare you there?"


async def test_a_server_that_takes_empty_replies_gets_the_history_as_it_is(
    peer: ScriptedPeer, gateway: OpenAIProvider
) -> None:
    peer.script(Reply.sse(*openai_text_stream(["ok"])))
    history = [
        Message(role=Role.USER, content="hi"),
        Message(role=Role.ASSISTANT, content="", reasoning="Let me"),
        Message(role=Role.USER, content="there?"),
    ]
    await gateway.generate(history)
    assert [m["role"] for m in peer.requests[0].body["messages"]] == ["user", "assistant", "user"]
