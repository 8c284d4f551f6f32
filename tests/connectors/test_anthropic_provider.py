"""AnthropicProvider: the real `anthropic` SDK over real HTTP against local fake servers.

fakellm plays a well-behaved Messages API (text, tool use, a multi-turn tool loop); stubllm
injects HTTP errors; the scripted peer sends exact SSE event bytes for everything else
(thinking, usage, Retry-After, error events, cut and stalled streams, garbage).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from stubllm.fixtures.models import Fixture, MatchCriteria, MessageMatch, MockResponse
from stubllm.server import MockLLMServer

from connectors.anthropic import AnthropicProvider
from connectors.resilience import BreakerState, CircuitBreaker, RetryPolicy
from gui_agent import create_interpreter, tool
from gui_agent.exceptions import (
    CircuitOpen,
    ConfigError,
    ModelAuthError,
    ModelConnectionError,
    ModelNotFound,
    ModelResponseError,
    ModelServerError,
    ModelTimeout,
)
from gui_agent.llm import LLMProvider
from schema import (
    Message,
    MessageType,
    ModelReasoningDelta,
    ModelSettings,
    ModelTextDelta,
    Role,
    RunFinished,
    RunOutcome,
    ToolCall,
    ToolSchema,
)
from tests.connectors.peers import (
    Cut,
    FakeClock,
    FakeLLMProcess,
    Reply,
    ScriptedPeer,
    Sleeps,
    Stall,
    anthropic_block,
    anthropic_end,
    anthropic_error,
    anthropic_event,
    anthropic_start,
    anthropic_text_block,
    anthropic_text_stream,
    consume,
)

FAKELLM_RULES = """
rules:
  - name: weather_answer
    when: {tool_result_contains: "18 degrees"}
    respond: {content: "It is 18 degrees and sunny in Paris."}
  - name: weather_call
    when: {messages_contain: "weather in paris"}
    respond:
      tool_calls:
        - {name: get_weather, arguments: {city: Paris}}
  - name: parallel_calls
    when: {messages_contain: "weather and the time"}
    respond:
      tool_calls:
        - {name: get_weather, arguments: {city: Oslo}}
        - {name: get_time, arguments: {tz: Europe/Oslo}}
  - name: greeting
    when: {messages_contain: "say hello"}
    respond: {content: "Hello there, how can I help you today?"}
"""

WEATHER = ToolSchema(
    name="get_weather",
    description="Current weather",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
TIME = ToolSchema(name="get_time", description="Current time")


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


@pytest.fixture(scope="module")
def fakellm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeLLMProcess]:
    server = FakeLLMProcess(FAKELLM_RULES, tmp_path_factory.mktemp("fakellm")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def stubllm() -> Iterator[MockLLMServer]:
    def failing(name: str, prompt: str, response: MockResponse) -> Fixture:
        return Fixture(
            name=name,
            match=MatchCriteria(messages=[MessageMatch(role="user", content=prompt)]),
            response=response,
        )

    server = MockLLMServer(
        host="127.0.0.1",
        port=0,
        fixtures=[
            failing(
                "bad_key",
                "needs a key",
                MockResponse(http_status=401, error_message="invalid x-api-key"),
            ),
            failing(
                "storm",
                "server storm",
                MockResponse(http_status=529, error_message="Overloaded"),
            ),
        ],
    )
    server.start()
    yield server
    server.stop()


def provider_for(url: str, **kwargs: object) -> AnthropicProvider:
    kwargs.setdefault("api_key", "sk-ant-test")
    return AnthropicProvider("claude-test", base_url=url, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
async def fake(fakellm: FakeLLMProcess) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider("claude-fake-1", base_url=fakellm.url, api_key="sk-ant-test")
    yield provider
    await provider.aclose()


@pytest.fixture
async def scripted(peer: ScriptedPeer, fast_retry: RetryPolicy) -> AsyncIterator[AnthropicProvider]:
    provider = provider_for(peer.url, retry=fast_retry)
    yield provider
    await provider.aclose()


# --- identity and configuration ---------------------------------------------------------


async def test_names_say_which_model() -> None:
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant-test")
    try:
        assert provider.name == "anthropic:claude-sonnet-4-5"
        assert isinstance(provider, LLMProvider)
    finally:
        await provider.aclose()


def test_no_key_is_a_config_error_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider("claude-sonnet-4-5")


# --- a well-behaved server (fakellm) ----------------------------------------------------


async def test_plain_text_arrives_as_several_deltas_then_one_response(
    fake: AnthropicProvider,
) -> None:
    outcome = await consume(fake.stream([user("Please say hello")]))
    assert len(outcome.texts) >= 3
    assert "".join(outcome.texts) == "Hello there, how can I help you today?"
    response = outcome.response
    assert response.text == "Hello there, how can I help you today?"
    assert response.finish_reason == "stop"
    assert response.usage.output_tokens > 0 and response.usage.requests == 1


async def test_tool_use_is_assembled_from_streamed_json(fake: AnthropicProvider) -> None:
    response = await fake.generate([user("What's the weather in Paris?")], tools=[WEATHER])
    (call,) = response.tool_calls
    assert (call.name, call.parsed_arguments()) == ("get_weather", {"city": "Paris"})
    assert call.id.startswith("toolu_")
    assert response.finish_reason == "tool_calls"


async def test_parallel_tool_use_keeps_order(fake: AnthropicProvider) -> None:
    response = await fake.generate(
        [user("Tell me the weather and the time in Oslo")], tools=[WEATHER, TIME]
    )
    assert [c.name for c in response.tool_calls] == ["get_weather", "get_time"]
    assert len({c.id for c in response.tool_calls}) == 2


async def test_a_tool_loop_sends_the_result_back_and_gets_the_final_answer(
    fake: AnthropicProvider,
) -> None:
    history = [
        Message(role=Role.SYSTEM, content="You are a weather bot."),
        user("How is the weather in Paris right now?"),
    ]
    first = await fake.generate(history, tools=[WEATHER])
    (call,) = first.tool_calls
    history += [
        Message(role=Role.ASSISTANT, content=first.text, tool_calls=first.tool_calls),
        Message(
            role=Role.TOOL,
            type=MessageType.FUNCTION,
            content="18 degrees, sunny",
            tool_call_id=call.id,
            name=call.name,
            metadata={"is_error": False},
        ),
    ]
    final = await fake.generate(history, tools=[WEATHER])
    assert final.text == "It is 18 degrees and sunny in Paris."
    assert final.tool_calls == ()


# --- exact wire behaviour (scripted peer) -----------------------------------------------


async def test_thinking_streams_as_reasoning_and_usage_adds_up(
    peer: ScriptedPeer, fast_retry: RetryPolicy
) -> None:
    start = anthropic_event(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-test",
                "usage": {"input_tokens": 20, "cache_read_input_tokens": 300, "output_tokens": 1},
            },
        }
    )
    thinking = anthropic_block(
        0,
        {"type": "thinking", "thinking": "", "signature": ""},
        [
            {"type": "thinking_delta", "thinking": "The user wants "},
            {"type": "thinking_delta", "thinking": "a greeting."},
            {"type": "signature_delta", "signature": "EqQBCgIYAhIM"},
        ],
    )
    peer.script(
        Reply.sse(
            start,
            *thinking,
            *anthropic_text_block(1, ["Hello", "!"]),
            *anthropic_end(output_tokens=42),
        )
    )
    provider = provider_for(peer.url, retry=fast_retry, thinking_budget=2048, temperature=0.5)
    try:
        outcome = await consume(provider.stream([user("hi")]))
    finally:
        await provider.aclose()
    assert [type(p) for p in outcome.parts[:-1]] == [
        ModelReasoningDelta,
        ModelReasoningDelta,
        ModelTextDelta,
        ModelTextDelta,
    ]
    response = outcome.response
    assert response.reasoning == "The user wants a greeting."
    assert response.text == "Hello!"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (320, 42)
    body = peer.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "temperature" not in body  # the API refuses one alongside thinking


async def test_a_tool_loop_with_thinking_sends_the_signed_thinking_back(
    peer: ScriptedPeer, fast_retry: RetryPolicy, tmp_path: Path
) -> None:
    """The API refuses a tool result whose assistant turn lost its thinking: the agent loop
    must send the signed thinking block back, unchanged, before the tool_use."""

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"18 degrees in {city}"

    thinking = anthropic_block(
        0,
        {"type": "thinking", "thinking": "", "signature": ""},
        [
            {"type": "thinking_delta", "thinking": "I should look it up."},
            {"type": "signature_delta", "signature": "EqQBCgIYAhIMsig"},
        ],
    )
    use = anthropic_block(
        1,
        {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {}},
        [{"type": "input_json_delta", "partial_json": '{"city": "Paris"}'}],
    )
    peer.script(
        Reply.sse(anthropic_start(), *thinking, *use, *anthropic_end("tool_use")),
        Reply.sse(*anthropic_text_stream(["Sunny, 18 degrees."])),
    )
    provider = provider_for(peer.url, retry=fast_retry, thinking_budget=1024)
    interpreter = create_interpreter(
        provider, tools=[get_weather], builtin_tools=False, workdir=tmp_path
    )
    try:
        events = [e async for e in interpreter.chat("weather in Paris?")]
    finally:
        await provider.aclose()
    assert any(isinstance(e, RunFinished) and e.outcome is RunOutcome.COMPLETED for e in events)
    assert interpreter.session.history[-1].content == "Sunny, 18 degrees."
    second = peer.requests[1].body["messages"]
    assert second[1] == {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": "I should look it up.",
                "signature": "EqQBCgIYAhIMsig",
            },
            {
                "type": "tool_use",
                "id": "toolu_9",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
        ],
    }
    assert second[2]["content"][0]["type"] == "tool_result"


async def test_the_request_on_the_wire(scripted: AnthropicProvider, peer: ScriptedPeer) -> None:
    peer.script(Reply.sse(*anthropic_text_stream(["ok"])))
    calls = (
        ToolCall(id="toolu_a", name="get_weather", arguments='{"city": "Rome"}'),
        ToolCall(id="toolu_b", name="get_time", arguments='{"tz": '),  # truncated
    )
    history = [
        Message(role=Role.SYSTEM, content="Be brief."),
        user("weather and time in Rome?"),
        Message(role=Role.ASSISTANT, content="Let me check.", tool_calls=calls),
        Message(role=Role.TOOL, content="20 C", tool_call_id="toolu_a", name="get_weather"),
        Message(
            role=Role.TOOL,
            content="could not parse the arguments",
            tool_call_id="toolu_b",
            name="get_time",
            metadata={"is_error": True},
        ),
    ]
    settings = ModelSettings(temperature=0.2, max_tokens=300)
    await scripted.generate(history, tools=[WEATHER, TIME], settings=settings)
    seen = peer.requests[0]
    assert seen.path == "/v1/messages"
    assert seen.headers["authorization"] == "Bearer sk-ant-test"
    assert "anthropic-version" in seen.headers
    body = seen.body
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("claude-test", 300, 0.2)
    assert body["stream"] is True
    assert body["system"] == "Be brief."
    assert [t["name"] for t in body["tools"]] == ["get_weather", "get_time"]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][1:] == [
        {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Rome"}},
        {
            "type": "tool_use",
            "id": "toolu_b",
            "name": "get_time",
            "input": {"_raw_arguments": '{"tz": '},
        },
    ]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "20 C"},
        {
            "type": "tool_result",
            "tool_use_id": "toolu_b",
            "content": "could not parse the arguments",
            "is_error": True,
        },
    ]


async def test_rate_limit_is_retried_after_the_time_the_server_asked(
    scripted: AnthropicProvider, peer: ScriptedPeer, sleeps: Sleeps
) -> None:
    peer.script(
        Reply.json(429, anthropic_error("rate_limit_error", "Slow down"), {"retry-after": "2"}),
        Reply.sse(*anthropic_text_stream(["made ", "it"])),
    )
    response = await scripted.generate([user("hi")])
    assert response.text == "made it"
    assert sleeps.delays == [2.0]
    assert peer.request_count == 2


async def test_an_overloaded_event_before_any_output_is_retried(
    scripted: AnthropicProvider, peer: ScriptedPeer, sleeps: Sleeps
) -> None:
    peer.script(
        Reply.sse(
            anthropic_start(),
            anthropic_event(anthropic_error("overloaded_error", "Overloaded")),
        ),
        Reply.sse(*anthropic_text_stream(["fine"])),
    )
    assert (await scripted.generate([user("hi")])).text == "fine"
    assert sleeps.delays == [0.5]


async def test_an_error_event_after_output_surfaces_without_a_retry(
    scripted: AnthropicProvider, peer: ScriptedPeer, sleeps: Sleeps
) -> None:
    peer.script(
        Reply.sse(
            anthropic_start(),
            anthropic_event(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
            ),
            anthropic_event(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "Part"},
                }
            ),
            anthropic_event(anthropic_error("overloaded_error", "Overloaded")),
        )
    )
    outcome = await consume(scripted.stream([user("hi")]))
    assert outcome.texts == ["Part"]
    assert isinstance(outcome.error, ModelServerError)
    assert "overloaded_error" in str(outcome.error)
    assert peer.request_count == 1
    assert sleeps.delays == []


async def test_unknown_model_is_model_not_found_naming_it(
    scripted: AnthropicProvider, peer: ScriptedPeer
) -> None:
    peer.script(Reply.json(404, anthropic_error("not_found_error", "model: claude-test")))
    outcome = await consume(scripted.stream([user("hi")]))
    assert isinstance(outcome.error, ModelNotFound)
    assert "'claude-test'" in str(outcome.error)
    assert peer.request_count == 1


async def test_a_stream_cut_midway_keeps_its_deltas_and_then_fails(
    scripted: AnthropicProvider, peer: ScriptedPeer
) -> None:
    text = anthropic_text_block(0, ["The answer ", "is"])
    peer.script(Reply.sse(anthropic_start(), *text[:3], Cut()))
    outcome = await consume(scripted.stream([user("hi")]))
    assert outcome.texts == ["The answer ", "is"]
    assert isinstance(outcome.error, ModelConnectionError)
    assert peer.request_count == 1


async def test_a_stream_that_ends_before_message_stop_counts_as_cut_off(
    scripted: AnthropicProvider, peer: ScriptedPeer
) -> None:
    peer.script(Reply.sse(anthropic_start(), *anthropic_text_block(0, ["Half"])))
    outcome = await consume(scripted.stream([user("hi")]))
    assert outcome.texts == ["Half"]
    assert isinstance(outcome.error, ModelConnectionError)
    assert "before the model finished" in str(outcome.error)


async def test_cancelling_a_slow_stream_closes_the_connection(
    scripted: AnthropicProvider, peer: ScriptedPeer
) -> None:
    text = anthropic_text_block(0, ["one ", "two "])
    peer.script(Reply.sse(anthropic_start(), *text[:3], Stall()))
    received: list[str] = []
    two_arrived = asyncio.Event()

    async def reader() -> None:
        async for part in scripted.stream([user("count slowly")]):
            assert isinstance(part, ModelTextDelta)
            received.append(part.text)
            if len(received) == 2:
                two_arrived.set()

    task = asyncio.create_task(reader())
    await two_arrived.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(peer.disconnected.wait, 5.0)
    assert received == ["one ", "two "]
    assert scripted.breaker.consecutive_failures == 0


async def test_a_server_that_never_answers_times_out(peer: ScriptedPeer) -> None:
    peer.script(Reply.silent())
    provider = provider_for(peer.url, timeout_s=0.3, retry=RetryPolicy(max_attempts=1))
    started = time.monotonic()
    try:
        outcome = await consume(provider.stream([user("hello?")]))
    finally:
        await provider.aclose()
    assert isinstance(outcome.error, ModelTimeout)
    assert time.monotonic() - started < 5


async def test_a_stream_that_goes_silent_times_out_too(peer: ScriptedPeer) -> None:
    peer.script(Reply.sse(anthropic_start(), Stall()))
    provider = provider_for(peer.url, timeout_s=0.3, retry=RetryPolicy(max_attempts=1))
    try:
        outcome = await consume(provider.stream([user("hello?")]))
    finally:
        await provider.aclose()
    assert isinstance(outcome.error, ModelTimeout)


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>502 Bad Gateway</body></html>",
        b'event: message_start\ndata: {"type": "message_start", "message": {\n\n',
        b"event: message_start\ndata: [1, 2]\n\n",
    ],
    ids=["html", "broken-json", "not-an-object"],
)
async def test_garbage_is_a_response_error_and_not_retried(
    scripted: AnthropicProvider, peer: ScriptedPeer, body: bytes
) -> None:
    kind = "text/html" if body.startswith(b"<html>") else "text/event-stream"
    peer.script(Reply(headers={"content-type": kind}, parts=(body,)))
    outcome = await consume(scripted.stream([user("hi")]))
    assert isinstance(outcome.error, ModelResponseError)
    assert peer.request_count == 1


async def test_an_oversized_response_is_cut_off_and_the_stream_closed(
    peer: ScriptedPeer,
) -> None:
    block = anthropic_text_block(0, ["x" * 100] * 30)
    peer.script(Reply.sse(anthropic_start(), *block[:-1], Stall()))
    provider = provider_for(peer.url, max_response_chars=1000)
    try:
        outcome = await consume(provider.stream([user("talk a lot")]))
    finally:
        await provider.aclose()
    assert isinstance(outcome.error, ModelResponseError)
    assert "size cap" in str(outcome.error)
    assert sum(map(len, outcome.texts)) <= 1000
    assert await asyncio.to_thread(peer.disconnected.wait, 5.0)


# --- injected HTTP errors (stubllm) -----------------------------------------------------


async def test_a_refused_key_is_an_auth_error_naming_the_variable(
    stubllm: MockLLMServer,
) -> None:
    stubllm.reset_calls()
    provider = provider_for(stubllm.url, api_key="sk-ant-bad")
    try:
        outcome = await consume(provider.stream([user("this needs a key")]))
    finally:
        await provider.aclose()
    assert isinstance(outcome.error, ModelAuthError)
    assert "ANTHROPIC_API_KEY" in str(outcome.error)
    assert "invalid x-api-key" in str(outcome.error)
    assert stubllm.call_count == 1


async def test_an_overload_storm_opens_the_breaker_and_then_no_request_is_made(
    stubllm: MockLLMServer, sleeps: Sleeps, clock: FakeClock
) -> None:
    stubllm.reset_calls()
    breaker = CircuitBreaker(failure_threshold=2, reset_after_s=30.0, clock=clock)
    retry = RetryPolicy(max_attempts=4, jitter=False, sleep=sleeps)
    provider = provider_for(stubllm.url, retry=retry, breaker=breaker)
    prompt = [user("a server storm is coming")]
    try:
        first = await consume(provider.stream(prompt))
        assert isinstance(first.error, ModelServerError)
        assert first.error.status == 529
        assert stubllm.call_count == 4
        second = await consume(provider.stream(prompt))
        assert isinstance(second.error, ModelServerError)  # its own retries, then it opens
        assert stubllm.call_count == 8
        third = await consume(provider.stream(prompt))
        assert isinstance(third.error, CircuitOpen)
        assert "try again in 30 s" in str(third.error)
        assert stubllm.call_count == 8  # refused without a request
        assert breaker.state is BreakerState.OPEN
    finally:
        await provider.aclose()
