"""OpenAIProvider: the real `openai` SDK over real HTTP against local fake servers.

fakellm plays a well-behaved OpenAI server (text, tool calls, a multi-turn tool loop);
stubllm injects HTTP errors; the scripted peer sends exact SSE bytes for everything else
(usage, reasoning, Retry-After, cut and stalled streams, garbage).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from stubllm.fixtures.models import Fixture, MatchCriteria, MessageMatch, MockResponse
from stubllm.server import MockLLMServer

from connectors.openai import OpenAIProvider
from connectors.resilience import BreakerState, CircuitBreaker, RetryPolicy
from gui_agent.exceptions import (
    CircuitOpen,
    ConfigError,
    ModelAuthError,
    ModelConnectionError,
    ModelError,
    ModelNotFound,
    ModelResponseError,
    ModelServerError,
    ModelTimeout,
)
from gui_agent.llm import LLMProvider
from schema import (
    ImagePart,
    Message,
    MessageType,
    ModelReasoningDelta,
    ModelSettings,
    ModelTextDelta,
    Role,
    ToolCall,
    ToolSchema,
)
from tests.connectors.peers import (
    OPENAI_DONE,
    Cut,
    FakeClock,
    FakeLLMProcess,
    Reply,
    ScriptedPeer,
    Sleeps,
    Stall,
    consume,
    openai_chunk,
    openai_error,
    openai_text_stream,
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
        - {name: get_weather, arguments: {city: Paris, unit: celsius}}
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
    def failing(name: str, prompt: str, *responses: MockResponse) -> Fixture:
        return Fixture(
            name=name,
            match=MatchCriteria(messages=[MessageMatch(role="user", content=prompt)]),
            sequence=list(responses),
        )

    server = MockLLMServer(
        host="127.0.0.1",
        port=0,
        fixtures=[
            failing(
                "bad_key",
                "needs a key",
                MockResponse(http_status=401, error_message="Incorrect API key provided: sk-bad"),
            ),
            failing(
                "storm_then_calm",
                "server storm",
                *[MockResponse(http_status=500, error_message="The server had an error")] * 8,
                MockResponse(content="Back to normal."),
            ),
        ],
    )
    server.start()
    yield server
    server.stop()


def provider_for(url: str, **kwargs: object) -> OpenAIProvider:
    kwargs.setdefault("api_key", "sk-test")
    return OpenAIProvider("gpt-test", base_url=url + "/v1", **kwargs)  # type: ignore[arg-type]


@pytest.fixture
async def fake(fakellm: FakeLLMProcess) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider("gpt-4o-mini", base_url=fakellm.url + "/v1", api_key="sk-test")
    yield provider
    await provider.aclose()


@pytest.fixture
async def scripted(peer: ScriptedPeer, fast_retry: RetryPolicy) -> AsyncIterator[OpenAIProvider]:
    provider = provider_for(peer.url, retry=fast_retry)
    yield provider
    await provider.aclose()


# --- identity and configuration ---------------------------------------------------------


async def test_names_say_which_server_and_model() -> None:
    official = OpenAIProvider("gpt-4o-mini", api_key="sk-test")
    compatible = OpenAIProvider("qwen", base_url="http://127.0.0.1:8080/v1")
    try:
        assert official.name == "openai:gpt-4o-mini"
        assert compatible.name == "openai-compatible:http://127.0.0.1:8080/v1#qwen"
        assert isinstance(official, LLMProvider)
    finally:
        await official.aclose()
        await compatible.aclose()


def test_the_openai_service_without_a_key_is_a_config_error_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIProvider("gpt-4o-mini")


# --- a well-behaved server (fakellm) ----------------------------------------------------


async def test_plain_text_arrives_as_several_deltas_then_one_response(
    fake: OpenAIProvider,
) -> None:
    outcome = await consume(fake.stream([user("Please say hello")]))
    assert len(outcome.texts) >= 3
    assert "".join(outcome.texts) == "Hello there, how can I help you today?"
    assert outcome.response.text == "Hello there, how can I help you today?"
    assert outcome.response.finish_reason == "stop"
    assert outcome.response.model == "gpt-4o-mini"


async def test_a_tool_call_is_assembled_from_streamed_argument_pieces(
    fake: OpenAIProvider,
) -> None:
    outcome = await consume(fake.stream([user("What's the weather in Paris?")], tools=[WEATHER]))
    (call,) = outcome.response.tool_calls
    assert call.name == "get_weather"
    assert call.parsed_arguments() == {"city": "Paris", "unit": "celsius"}
    assert call.id
    assert outcome.response.finish_reason == "tool_calls"


async def test_parallel_tool_calls_keep_their_order_and_ids(fake: OpenAIProvider) -> None:
    response = await fake.generate(
        [user("Tell me the weather and the time in Oslo")], tools=[WEATHER, TIME]
    )
    assert [c.name for c in response.tool_calls] == ["get_weather", "get_time"]
    assert [c.parsed_arguments() for c in response.tool_calls] == [
        {"city": "Oslo"},
        {"tz": "Europe/Oslo"},
    ]
    assert len({c.id for c in response.tool_calls}) == 2


async def test_a_tool_loop_sends_the_result_back_and_gets_the_final_answer(
    fake: OpenAIProvider,
) -> None:
    history = [
        Message(role=Role.SYSTEM, content="You are a weather bot."),
        user("How is the weather in Paris today?"),
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
        ),
    ]
    final = await fake.generate(history, tools=[WEATHER])
    assert final.text == "It is 18 degrees and sunny in Paris."
    assert final.tool_calls == ()


# --- exact wire behaviour (scripted peer) -----------------------------------------------


async def test_usage_comes_from_the_final_stream_chunk(
    scripted: OpenAIProvider, peer: ScriptedPeer
) -> None:
    peer.script(Reply.sse(*openai_text_stream(["Hi", " you"], usage=(42, 7))))
    outcome = await consume(scripted.stream([user("hi")]))
    usage = outcome.response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (42, 7, 1)
    assert peer.requests[0].body["stream_options"] == {"include_usage": True}


async def test_the_request_on_the_wire(scripted: OpenAIProvider, peer: ScriptedPeer) -> None:
    peer.script(Reply.sse(*openai_text_stream(["ok"])))
    call = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Rome"}')
    history = [
        Message(role=Role.SYSTEM, content="sys"),
        Message(role=Role.USER, content="look", images=(ImagePart(data="QUJD"),)),
        Message(role=Role.ASSISTANT, tool_calls=(call,)),
        Message(role=Role.TOOL, content="20 C", tool_call_id="call_1", name="get_weather"),
        Message(role=Role.ASSISTANT, type=MessageType.CONFIRMATION, content="Allow? y/n"),
    ]
    await scripted.generate(
        history, tools=[WEATHER], settings=ModelSettings(temperature=0.1, max_tokens=64)
    )
    seen = peer.requests[0]
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == "Bearer sk-test"
    body = seen.body
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert (body["temperature"], body["max_tokens"]) == (0.1, 64)
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert body["messages"][1]["content"][1]["image_url"]["url"] == "data:image/png;base64,QUJD"
    assert body["messages"][2]["content"] == ""
    assert body["messages"][2]["tool_calls"][0]["id"] == "call_1"
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "20 C"}


async def test_reasoning_fields_stream_as_reasoning_deltas(
    scripted: OpenAIProvider, peer: ScriptedPeer
) -> None:
    peer.script(
        Reply.sse(
            openai_chunk({"role": "assistant"}),
            openai_chunk({"reasoning_content": "The user "}),
            openai_chunk({"reasoning": "greets me."}),
            openai_chunk({"content": "Hello!"}),
            openai_chunk({}, finish_reason="stop"),
            OPENAI_DONE,
        )
    )
    outcome = await consume(scripted.stream([user("hi")]))
    kinds = [type(p) for p in outcome.parts[:-1]]
    assert kinds == [ModelReasoningDelta, ModelReasoningDelta, ModelTextDelta]
    assert outcome.response.reasoning == "The user greets me."
    assert outcome.response.text == "Hello!"


async def test_streamed_tool_calls_without_ids_and_with_broken_json_pass_through(
    scripted: OpenAIProvider, peer: ScriptedPeer
) -> None:
    peer.script(
        Reply.sse(
            openai_chunk({"tool_calls": [{"index": 0, "function": {"name": "get_weather"}}]}),
            openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
            openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "Par"}}]}),
            openai_chunk({}, finish_reason="tool_calls"),
            OPENAI_DONE,
        )
    )
    response = await scripted.generate([user("weather")], tools=[WEATHER])
    (call,) = response.tool_calls
    assert call.id.startswith("call_")
    assert call.arguments == '{"city": Par'  # the agent loop reports the parse error


async def test_an_emoji_escaped_as_a_pair_split_over_two_chunks_arrives_whole(
    scripted: OpenAIProvider, peer: ScriptedPeer
) -> None:
    # The peer JSON-escapes as servers do: "\\ud83d" in one chunk, "\\ude00" in the next.
    peer.script(Reply.sse(*openai_text_stream(["Hi \ud83d", "\ude00!"])))
    outcome = await consume(scripted.stream([user("smile")]))
    assert outcome.texts == ["Hi ", "\U0001f600!"]
    assert outcome.response.text == "Hi \U0001f600!"


async def test_a_server_refusing_stream_options_is_asked_again_without_them(
    scripted: OpenAIProvider, peer: ScriptedPeer
) -> None:
    refusal = openai_error(400, "Unrecognized request argument supplied: stream_options")
    peer.script(
        Reply.json(400, refusal),
        Reply.sse(*openai_text_stream(["one"])),
        Reply.sse(*openai_text_stream(["two"])),
    )
    first = await scripted.generate([user("hi")])
    second = await scripted.generate([user("hi again")])
    assert (first.text, second.text) == ("one", "two")
    assert ["stream_options" in r.body for r in peer.requests] == [True, False, False]


async def test_rate_limit_is_retried_after_the_time_the_server_asked(
    scripted: OpenAIProvider, peer: ScriptedPeer, sleeps: Sleeps
) -> None:
    peer.script(
        Reply.json(429, openai_error(429, "Slow down", "rate_limit_error"), {"retry-after": "3"}),
        Reply.sse(*openai_text_stream(["made ", "it"])),
    )
    response = await scripted.generate([user("hi")])
    assert response.text == "made it"
    assert sleeps.delays == [3.0]
    assert peer.request_count == 2


async def test_an_overloaded_server_is_retried_after_the_time_it_asked(
    scripted: OpenAIProvider, peer: ScriptedPeer, sleeps: Sleeps
) -> None:
    """A 503 with Retry-After is waited as long as the server said, not the first backoff
    step (0.5 s), which would only hit the overloaded server again too soon."""
    peer.script(
        Reply.json(503, openai_error(503, "overloaded", "server_error"), {"retry-after": "7"}),
        Reply.sse(*openai_text_stream(["later"])),
    )
    response = await scripted.generate([user("hi")])
    assert response.text == "later"
    assert sleeps.delays == [7.0]


async def test_an_error_event_before_any_output_is_retried(
    scripted: OpenAIProvider, peer: ScriptedPeer, sleeps: Sleeps
) -> None:
    peer.script(
        Reply.sse(
            openai_chunk({"role": "assistant"}),
            b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n',
        ),
        Reply.sse(*openai_text_stream(["fine"])),
    )
    assert (await scripted.generate([user("hi")])).text == "fine"
    assert sleeps.delays == [0.5]


async def test_unknown_model_is_model_not_found_naming_it(
    scripted: OpenAIProvider, peer: ScriptedPeer
) -> None:
    peer.script(Reply.json(404, openai_error(404, "The model `gpt-test` does not exist")))
    outcome = await consume(scripted.stream([user("hi")]))
    assert isinstance(outcome.error, ModelNotFound)
    assert "'gpt-test'" in str(outcome.error)
    assert peer.request_count == 1


async def test_a_stream_cut_midway_keeps_its_deltas_and_then_fails(
    scripted: OpenAIProvider, peer: ScriptedPeer, sleeps: Sleeps
) -> None:
    peer.script(
        Reply.sse(
            openai_chunk({"role": "assistant"}),
            openai_chunk({"content": "The answer "}),
            openai_chunk({"content": "is"}),
            Cut(),
        )
    )
    outcome = await consume(scripted.stream([user("hi")]))
    assert outcome.texts == ["The answer ", "is"]
    assert isinstance(outcome.error, ModelConnectionError)
    assert peer.request_count == 1  # not retried: the text was already shown
    assert sleeps.delays == []


async def test_a_stream_that_ends_without_a_finish_reason_counts_as_cut_off(
    scripted: OpenAIProvider, peer: ScriptedPeer
) -> None:
    peer.script(Reply.sse(openai_chunk({"content": "The answer is"})))  # body ends cleanly
    outcome = await consume(scripted.stream([user("hi")]))
    assert outcome.texts == ["The answer is"]
    assert isinstance(outcome.error, ModelConnectionError)
    assert "before the model finished" in str(outcome.error)


async def test_cancelling_a_slow_stream_closes_the_connection(
    scripted: OpenAIProvider, peer: ScriptedPeer
) -> None:
    peer.script(
        Reply.sse(openai_chunk({"content": "one "}), openai_chunk({"content": "two "}), Stall())
    )
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


async def test_closing_the_stream_early_closes_the_connection(
    scripted: OpenAIProvider, peer: ScriptedPeer
) -> None:
    peer.script(Reply.sse(openai_chunk({"content": "one "}), Stall()))
    stream = scripted.stream([user("count slowly")])
    assert await anext(stream) == ModelTextDelta(text="one ")
    await stream.aclose()
    assert await asyncio.to_thread(peer.disconnected.wait, 5.0)


@pytest.mark.parametrize("where", ["provider", "request settings"])
async def test_a_server_that_never_answers_times_out(peer: ScriptedPeer, where: str) -> None:
    peer.script(Reply.silent())
    short = {"timeout_s": 0.3} if where == "provider" else {}
    settings = ModelSettings(timeout_s=0.3) if where == "request settings" else None
    provider = provider_for(peer.url, retry=RetryPolicy(max_attempts=1), **short)
    started = time.monotonic()
    try:
        outcome = await consume(provider.stream([user("hello?")], settings=settings))
    finally:
        await provider.aclose()
    assert isinstance(outcome.error, ModelTimeout)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>502 Bad Gateway</body></html>",
        b'data: {"id": "x", "choices": [{"delta": {"content": "Hi"\n\n',
        b"data: [1, 2, 3]\n\n",
    ],
    ids=["html", "broken-json", "not-an-object"],
)
async def test_garbage_is_a_response_error_and_not_retried(
    scripted: OpenAIProvider, peer: ScriptedPeer, body: bytes
) -> None:
    kind = "text/html" if body.startswith(b"<html>") else "text/event-stream"
    peer.script(Reply(headers={"content-type": kind}, parts=(body,)))
    outcome = await consume(scripted.stream([user("hi")]))
    assert isinstance(outcome.error, ModelResponseError)
    assert peer.request_count == 1


async def test_an_oversized_response_is_cut_off_and_the_stream_closed(peer: ScriptedPeer) -> None:
    chunks = [openai_chunk({"content": "x" * 100}) for _ in range(30)]
    peer.script(Reply.sse(*chunks, Stall()))
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


async def test_a_refused_key_is_an_auth_error_naming_the_variable(stubllm: MockLLMServer) -> None:
    stubllm.reset_calls()
    provider = provider_for(stubllm.url, api_key="sk-bad")
    try:
        outcome = await consume(provider.stream([user("this needs a key")]))
    finally:
        await provider.aclose()
    assert isinstance(outcome.error, ModelAuthError)
    assert "OPENAI_API_KEY" in str(outcome.error)
    assert "Incorrect API key" in str(outcome.error)
    assert stubllm.call_count == 1


async def test_a_500_storm_opens_the_breaker_and_then_no_request_is_made(
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
        assert stubllm.call_count == 4
        assert sleeps.delays == [0.5, 1.0, 2.0]
        assert breaker.consecutive_failures == 1  # one request failed, its retries included
        second = await consume(provider.stream(prompt))
        assert isinstance(second.error, ModelServerError)  # tried in full: its own retries
        assert stubllm.call_count == 8
        assert breaker.state is BreakerState.OPEN  # opened by the second failed request

        clock.advance(10)
        third = await consume(provider.stream(prompt))
        assert isinstance(third.error, CircuitOpen)
        assert "failed 2 requests in a row" in str(third.error)
        assert "try again in 20 s" in str(third.error)
        assert stubllm.call_count == 8  # refused without a request
    finally:
        await provider.aclose()


async def test_after_the_pause_one_trial_request_closes_the_breaker(
    peer: ScriptedPeer, sleeps: Sleeps, clock: FakeClock
) -> None:
    breaker = CircuitBreaker(failure_threshold=2, reset_after_s=30.0, clock=clock)
    retry = RetryPolicy(max_attempts=1, sleep=sleeps)
    provider = provider_for(peer.url, retry=retry, breaker=breaker)
    peer.script(
        *[Reply.json(503, openai_error(503, "overloaded", "server_error"))] * 3,
        Reply.sse(*openai_text_stream(["back"])),
    )
    try:
        for _ in range(2):
            assert isinstance(
                (await consume(provider.stream([user("hi")]))).error, ModelServerError
            )
        assert isinstance((await consume(provider.stream([user("hi")]))).error, CircuitOpen)
        clock.advance(30)
        failed_trial = await consume(provider.stream([user("hi")]))
        assert isinstance(failed_trial.error, ModelServerError)
        assert breaker.state is BreakerState.OPEN  # a failed trial pauses again
        clock.advance(30)
        assert (await consume(provider.stream([user("hi")]))).response.text == "back"
        assert breaker.state is BreakerState.CLOSED
        assert peer.request_count == 4
    finally:
        await provider.aclose()


async def test_model_errors_carry_the_provider_name(stubllm: MockLLMServer) -> None:
    provider = provider_for(stubllm.url, api_key="sk-bad")
    try:
        with pytest.raises(ModelError) as caught:
            await provider.generate([user("this needs a key")])
    finally:
        await provider.aclose()
    assert caught.value.provider == provider.name
    assert caught.value.status == 401
