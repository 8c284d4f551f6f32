"""Defects users of real servers hit, found in the ninth connector hunt.

- A failed tool result without text (a tool returning ``ToolOutput("", is_error=True)``)
  went to Claude as ``is_error`` with empty content, which the API refuses: the session was
  stuck, since the history goes again with every message (also after a switch to Claude).
- ``--model anthropic:...`` ignored ``ANTHROPIC_BASE_URL`` from the ``.env`` file (the SDK
  reads only the process environment): requests, and the key, went to api.anthropic.com.
- An error object inside a labelled event stream (vLLM's ``{"error": {"code": 400}}``,
  OpenRouter's 401) was a retryable server error: retried four times, counted against the
  circuit breaker, and a refused key did not name its variable.
- A 429 ``insufficient_quota`` (a key out of credit) was retried as a rate limit and then
  paused every call; now it says so at once.
- The circuit breaker's error ("calls are paused") did not say why.
- A temperature above 1 (the page offers 0 to 2) made every request to Claude fail.
- A reply ended with the finish reason ``error`` (Mistral, OpenRouter) looked complete.
- ``openai-compatible:localhost:11434/v1#m`` was refused as needing "a URL and a model".
- A compatible server sending text deltas to the thinking block's index: the text was shown
  while it streamed, then the finished reply was empty (its text filed as reasoning).
- A server that reports no usage made replies cost 0 tokens: AutoChat's token budget was
  never reached.
- A password in a server's URL (basic auth) was shown in the model list, logs and errors.
- A model that cannot take tools (Ollama's gemma3) failed every message of the executor.
- A timeout did not say how long the server had been silent.
"""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import pytest

from connectors.anthropic import AnthropicProvider
from connectors.anthropic_mapping import EMPTY_ERROR_RESULT, messages_to_anthropic
from connectors.openai import OpenAIProvider
from connectors.registry import parse_model, resolve_models
from connectors.resilience import BreakerState, CircuitBreaker, RetryPolicy
from gui_agent.exceptions import (
    CircuitOpen,
    ConfigError,
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelServerError,
    ModelTimeout,
)
from schema import (
    ImagePart,
    Message,
    MessageStatus,
    ModelSettings,
    Role,
    ToolCall,
    ToolSchema,
    Usage,
)
from tests.connectors.peers import (
    OPENAI_DONE,
    FakeClock,
    Reply,
    ScriptedPeer,
    Sleeps,
    Stall,
    anthropic_end,
    anthropic_event,
    anthropic_start,
    anthropic_text_block,
    anthropic_text_stream,
    consume,
    openai_chunk,
    openai_error,
    openai_text_stream,
    sse_data,
)
from tests.connectors.wire_rules import anthropic_problems

PNG = ImagePart(media_type="image/png", data="UE5H")
PNG_SOURCE = {"media_type": "image/png", "data": "UE5H"}
CALL = ToolCall(id="call_1", name="check", arguments="{}")


def history_with_result(result: Message) -> list[Message]:
    return [
        Message(role=Role.USER, content="check it"),
        Message(role=Role.ASSISTANT, content="", tool_calls=(CALL,)),
        result,
    ]


def failed(content: str, **kwargs: object) -> Message:
    return Message(
        role=Role.TOOL,
        content=content,
        tool_call_id=CALL.id,
        name=CALL.name,
        **kwargs,
    )


# --- a failed tool result without words ----------------------------------------------------


@pytest.mark.parametrize(
    "result",
    [
        failed("", metadata={"is_error": True}),
        failed("  \n", metadata={"is_error": True}),
        failed("", status=MessageStatus.ERROR),
    ],
    ids=["empty", "blank", "error-status"],
)
def test_a_failed_tool_result_without_text_goes_to_claude_with_words(result: Message) -> None:
    _, wire = messages_to_anthropic(history_with_result(result), model="claude-test")
    assert anthropic_problems(wire) == []
    (block,) = wire[-1]["content"]
    assert block["is_error"] is True
    assert block["content"] == EMPTY_ERROR_RESULT


def test_a_failed_result_with_words_or_an_image_and_a_quiet_success_go_as_they_are() -> None:
    with_words = failed("exit code 2", metadata={"is_error": True})
    with_image = failed("", metadata={"is_error": True}, images=(PNG,))
    quiet = failed("", metadata={"is_error": False})
    for result, content in (
        (with_words, "exit code 2"),
        (with_image, [{"type": "image", "source": {"type": "base64", **PNG_SOURCE}}]),
        (quiet, ""),
    ):
        _, wire = messages_to_anthropic(history_with_result(result), model="claude-test")
        assert anthropic_problems(wire) == []
        assert wire[-1]["content"][0]["content"] == content


async def test_a_session_switched_to_claude_after_a_silent_tool_failure_is_answered(
    peer: ScriptedPeer,
) -> None:
    peer.script(Reply.sse(*anthropic_text_stream(["It failed; trying another way."])))
    claude = AnthropicProvider(
        "claude-test", api_key="k", base_url=peer.url, retry=RetryPolicy(max_attempts=1)
    )
    history = history_with_result(failed("", metadata={"is_error": True}))
    async with claude:
        outcome = await consume(claude.stream(history))
    assert outcome.response.text == "It failed; trying another way."
    (sent,) = peer.requests
    assert anthropic_problems(sent.body["messages"]) == []


# --- ANTHROPIC_BASE_URL for a Claude model named explicitly ----------------------------------


async def test_an_explicit_claude_model_goes_to_the_base_url_in_the_env_file(
    tmp_path: Path,
) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("ANTHROPIC_API_KEY=sk-ant-proxy\nANTHROPIC_BASE_URL=http://127.0.0.1:9\n")
    registry = await resolve_models(
        explicit=["anthropic:claude-opus-4-1"],
        env={},
        dotenv_path=dotenv,
        probe_local=False,
        embedded=False,
    )
    assert registry.spec("anthropic:claude-opus-4-1").base_url == "http://127.0.0.1:9"
    provider = registry.get("anthropic:claude-opus-4-1")
    assert isinstance(provider, AnthropicProvider)
    assert str(provider._client.base_url).rstrip("/") == "http://127.0.0.1:9"
    explicit = next(i for i in registry.describe() if i.name == "anthropic:claude-opus-4-1")
    assert "Requests go to http://127.0.0.1:9" in explicit.note


async def test_models_say_where_a_vendor_model_with_another_base_url_sends_requests() -> None:
    registry = await resolve_models(
        env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
        dotenv_path=None,
        probe_local=False,
        embedded=False,
    )
    (info,) = registry.describe()
    assert "Requests go to http://127.0.0.1:9/v1" in info.note
    plain = await resolve_models(
        env={"OPENAI_API_KEY": "sk-test"}, dotenv_path=None, probe_local=False, embedded=False
    )
    assert "Requests go to" not in plain.describe()[0].note


# --- an error object in a labelled event stream ----------------------------------------------


VLLM_CONTEXT_ERROR = {
    "error": {
        "object": "error",
        "message": "This model's maximum context length is 4096 tokens",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
}


async def test_a_refusal_sent_in_the_event_stream_is_not_retried(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps
) -> None:
    peer.script(*[Reply.sse(sse_data(VLLM_CONTEXT_ERROR))] * 4)
    breaker = CircuitBreaker(failure_threshold=1)
    async with OpenAIProvider(
        "qwen3", base_url=peer.url + "/v1", retry=fast_retry, breaker=breaker
    ) as provider:
        outcome = await consume(provider.stream([Message(role=Role.USER, content="hi")]))
    assert isinstance(outcome.error, ModelError)
    assert not outcome.error.retryable and outcome.error.status == 400
    assert "maximum context length is 4096 tokens" in str(outcome.error)
    assert peer.request_count == 1 and sleeps.delays == []
    assert breaker.state is BreakerState.CLOSED  # the server is fine; the request was not


async def test_a_refused_key_sent_in_the_event_stream_names_the_variable_to_set(
    peer: ScriptedPeer,
) -> None:
    peer.script(
        Reply.sse(sse_data({"error": {"message": "No auth credentials found", "code": 401}}))
    )
    registry = await resolve_models(
        explicit=[f"openai-compatible:{peer.url}/v1#some/model"],
        env={},
        dotenv_path=None,
        probe_local=False,
        embedded=False,
    )
    provider = registry.get()
    outcome = await consume(provider.stream([Message(role=Role.USER, content="hi")]))
    assert isinstance(outcome.error, ModelAuthError)
    assert "OPENAI_COMPATIBLE_API_KEY" in str(outcome.error)
    assert "No auth credentials found" in str(outcome.error)
    assert peer.request_count == 1
    assert isinstance(provider, OpenAIProvider)
    await provider.aclose()


async def test_a_rate_limit_sent_in_the_event_stream_is_still_retried(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps
) -> None:
    limited = {"error": {"message": "Rate limit exceeded: upstream", "code": 429}}
    peer.script(Reply.sse(sse_data(limited)), Reply.sse(*openai_text_stream(["fine"])))
    async with OpenAIProvider("m", base_url=peer.url + "/v1", retry=fast_retry) as provider:
        response = await provider.generate([Message(role=Role.USER, content="hi")])
    assert response.text == "fine"
    assert sleeps.delays == [0.5]


# --- why calls are paused --------------------------------------------------------------------


async def test_paused_calls_say_what_the_last_failure_was(
    peer: ScriptedPeer, fast_retry: RetryPolicy, clock: FakeClock
) -> None:
    peer.script(*[Reply.json(503, openai_error(503, "model is loading", "server_error"))] * 2)
    breaker = CircuitBreaker(failure_threshold=2, reset_after_s=30.0, clock=clock)
    once = RetryPolicy(max_attempts=1, sleep=fast_retry.sleep)  # a request: one attempt
    async with OpenAIProvider(
        "qwen3", base_url=peer.url + "/v1", retry=once, breaker=breaker
    ) as provider:
        for _ in range(2):
            await consume(provider.stream([Message(role=Role.USER, content="hi")]))
        opened = await consume(provider.stream([Message(role=Role.USER, content="hi")]))
        clock.advance(10)
        later = await consume(provider.stream([Message(role=Role.USER, content="hi")]))
    assert peer.request_count == 2
    for outcome in (opened, later):
        assert isinstance(outcome.error, CircuitOpen)
        text = str(outcome.error)
        assert "failed 2 requests in a row" in text
        assert "the last failure: server error (HTTP 503)" in text
        assert "model is loading" in text
        assert text.count(provider.name) == 1  # named once, not again inside the cause
    assert "try again in 20 s" in str(later.error)


def test_a_breaker_that_opens_at_the_first_failure_says_a_request(clock: FakeClock) -> None:
    breaker = CircuitBreaker(failure_threshold=1, clock=clock)
    breaker.record_failure(ModelServerError("m: server error (HTTP 502)", provider="m"))
    text = str(breaker.open_error("m"))
    assert "the model failed a request, so calls are paused" in text
    assert text.endswith("(the last failure: server error (HTTP 502))")


# --- a key out of credit ---------------------------------------------------------------------

QUOTA = openai_error(
    429,
    "You exceeded your current quota, please check your plan and billing details.",
    "insufficient_quota",
)
QUOTA["error"]["code"] = "insufficient_quota"


QUOTA_BY_TYPE = {"error": {**QUOTA["error"], "code": 429}}  # the status as the code


@pytest.mark.parametrize("how", ["status", "in-stream", "in-stream-by-type"])
async def test_a_quota_used_up_is_said_at_once_not_retried_as_a_rate_limit(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps, how: str
) -> None:
    replies = {
        "status": Reply.json(429, QUOTA),
        "in-stream": Reply.sse(sse_data(QUOTA)),
        "in-stream-by-type": Reply.sse(sse_data(QUOTA_BY_TYPE)),
    }
    reply = replies[how]
    peer.script(*[reply] * 4)
    breaker = CircuitBreaker(failure_threshold=2)
    async with OpenAIProvider(
        "gpt-test", api_key="sk-test", base_url=peer.url + "/v1", retry=fast_retry, breaker=breaker
    ) as provider:
        outcome = await consume(provider.stream([Message(role=Role.USER, content="hi")]))
    error = outcome.error
    assert isinstance(error, ModelError) and not isinstance(error, ModelRateLimited)
    assert not error.retryable and error.status == 429
    assert "quota of the key in OPENAI_API_KEY is used up" in str(error)
    assert "check your plan and billing details" in str(error)
    assert peer.request_count == 1 and sleeps.delays == []
    assert breaker.state is BreakerState.CLOSED


async def test_an_ordinary_rate_limit_is_still_retried(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps
) -> None:
    limited = openai_error(429, "Rate limit reached for requests", "requests")
    limited["error"]["code"] = "rate_limit_exceeded"
    peer.script(Reply.json(429, limited), Reply.sse(*openai_text_stream(["fine"])))
    async with OpenAIProvider("m", base_url=peer.url + "/v1", retry=fast_retry) as provider:
        assert (await provider.generate([Message(role=Role.USER, content="hi")])).text == "fine"
    assert sleeps.delays == [0.5]


# --- a temperature above Claude's range ------------------------------------------------------


async def test_a_temperature_above_claudes_range_is_sent_as_its_highest(
    peer: ScriptedPeer,
) -> None:
    peer.script(*[Reply.sse(*anthropic_text_stream(["ok"]))] * 2)
    claude = AnthropicProvider(
        "claude-test", api_key="k", base_url=peer.url, retry=RetryPolicy(max_attempts=1)
    )
    prompt = [Message(role=Role.USER, content="hi")]
    async with claude:
        for temperature in (1.6, 0.3):
            outcome = await consume(
                claude.stream(prompt, settings=ModelSettings(temperature=temperature))
            )
            assert outcome.response.text == "ok"
    assert [r.body["temperature"] for r in peer.requests] == [1.0, 0.3]


# --- a reply that ends with the finish reason "error" ----------------------------------------


async def test_a_reply_the_server_ends_with_an_error_does_not_look_complete(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps
) -> None:
    peer.script(
        Reply.sse(
            openai_chunk({"role": "assistant"}),
            openai_chunk({"content": "The first half of"}),
            openai_chunk({}, finish_reason="error"),
            OPENAI_DONE,
        )
    )
    async with OpenAIProvider("mistral", base_url=peer.url + "/v1", retry=fast_retry) as provider:
        outcome = await consume(provider.stream([Message(role=Role.USER, content="hi")]))
    assert outcome.texts == ["The first half of"]  # what came stays shown
    assert isinstance(outcome.error, ModelServerError)
    assert "ended the reply with an error" in str(outcome.error)
    assert peer.request_count == 1  # not asked again: the text would show twice


async def test_an_error_finish_before_any_text_is_asked_again(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps
) -> None:
    peer.script(
        Reply.sse(openai_chunk({"role": "assistant"}), openai_chunk({}, finish_reason="error")),
        Reply.sse(*openai_text_stream(["whole"])),
    )
    async with OpenAIProvider("mistral", base_url=peer.url + "/v1", retry=fast_retry) as provider:
        response = await provider.generate([Message(role=Role.USER, content="hi")])
    assert response.text == "whole" and response.finish_reason == "stop"
    assert sleeps.delays == [0.5]


# --- a server URL given without http:// -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "openai-compatible:localhost:11434/v1#llama3.1:8b",
            "does not start with http:// or https:// (e.g. http://localhost:11434/v1)",
        ),
        ("openai-compatible:ftp://127.0.0.1/v1#m", "only http:// and https:// URLs are served"),
    ],
    ids=["no-scheme", "other-scheme"],
)
def test_a_server_url_without_http_is_refused_saying_so(text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_model(text, source="--model flag")
    said = str(caught.value)
    assert problem in said
    assert "needs a URL and a model name" not in said  # it has both


# --- a compatible server that sends the answer to the index of the thinking block -----------


async def test_text_sent_to_a_thinking_blocks_index_stays_the_answer(peer: ScriptedPeer) -> None:
    """Older sglang and other Anthropic-compatible servers: the reply's text deltas name the
    index of the thinking block. The streamed text was shown, and then the finished reply
    was empty, its text filed as reasoning."""
    thinking = {"type": "thinking", "thinking": ""}
    peer.script(
        Reply.sse(
            anthropic_start(),
            anthropic_event({"type": "content_block_start", "index": 0, "content_block": thinking}),
            anthropic_event(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "Two and two."},
                }
            ),
            anthropic_event(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "4"},
                }
            ),
            anthropic_event({"type": "content_block_stop", "index": 0}),
            *anthropic_end(),
        )
    )
    claude = AnthropicProvider(
        "glm-4.6", api_key="k", base_url=peer.url, retry=RetryPolicy(max_attempts=1)
    )
    async with claude:
        outcome = await consume(claude.stream([Message(role=Role.USER, content="2+2?")]))
    assert outcome.texts == ["4"] and outcome.thoughts == ["Two and two."]
    assert outcome.response.text == "4"
    assert outcome.response.reasoning == "Two and two."


# --- a server that reports no usage -------------------------------------------------------------


async def test_a_reply_without_reported_usage_costs_estimated_tokens(
    peer: ScriptedPeer, fast_retry: RetryPolicy
) -> None:
    """Servers that refuse stream_options or ignore it send no usage: the reply cost nothing,
    the usage shown was 0 and AutoChat's token budget could never be reached."""
    peer.script(Reply.sse(*openai_text_stream(["Paris is the capital ", "of France."])))
    question = [Message(role=Role.USER, content="What is the capital of France? " * 20)]
    async with OpenAIProvider("qwen3", base_url=peer.url + "/v1", retry=fast_retry) as provider:
        usage = (await provider.generate(question)).usage
    assert usage.estimated and usage.requests == 1
    assert usage.input_tokens > 60  # the question, counted
    assert 0 < usage.output_tokens < 20  # the reply, counted


async def test_reported_usage_is_taken_as_it_is(
    peer: ScriptedPeer, fast_retry: RetryPolicy
) -> None:
    peer.script(Reply.sse(*openai_text_stream(["Paris."], usage=(31, 2))))
    async with OpenAIProvider("qwen3", base_url=peer.url + "/v1", retry=fast_retry) as provider:
        usage = (await provider.generate([Message(role=Role.USER, content="capital?")])).usage
    assert usage == Usage(input_tokens=31, output_tokens=2, requests=1)


async def test_a_claude_compatible_server_without_usage_gets_it_estimated(
    peer: ScriptedPeer,
) -> None:
    start = anthropic_event(
        {
            "type": "message_start",
            "message": {"id": "m", "type": "message", "role": "assistant", "content": []},
        }
    )
    end = anthropic_event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
    peer.script(
        Reply.sse(start, *anthropic_text_block(0, ["Paris."]), end),
        Reply.sse(*anthropic_text_stream(["Paris."], input_tokens=12, output_tokens=3)),
    )
    claude = AnthropicProvider(
        "glm-4.6", api_key="k", base_url=peer.url, retry=RetryPolicy(max_attempts=1)
    )
    question = [Message(role=Role.USER, content="What is the capital of France? " * 20)]
    async with claude:
        counted = (await claude.generate(question)).usage
        reported = (await claude.generate(question)).usage
    assert counted.estimated and counted.input_tokens > 60 and counted.output_tokens > 0
    assert reported == Usage(input_tokens=12, output_tokens=3, requests=1)


# --- a password in a server's URL -------------------------------------------------------------


async def test_a_password_in_a_server_url_is_used_but_never_shown(
    peer: ScriptedPeer, caplog: pytest.LogCaptureFixture
) -> None:
    """A server behind basic auth given as http://user:secret@host/v1: the password was in
    the model list, every log line and every error a chat keeps (and exports)."""
    url = f"http://alice:s3cr3t@127.0.0.1:{peer.port}/v1"
    peer.script(Reply.json(500, {"error": {"message": "boom"}}))
    with caplog.at_level(logging.DEBUG):
        registry = await resolve_models(
            explicit=[f"openai-compatible:{url}#qwen3"],
            env={},
            dotenv_path=None,
            probe_local=False,
            embedded=False,
        )
        provider = registry.get()
        assert isinstance(provider, OpenAIProvider)
        provider.retry = RetryPolicy(max_attempts=1)
        outcome = await consume(provider.stream([Message(role=Role.USER, content="hi")]))
        await provider.aclose()
    ours = [r.getMessage() for r in caplog.records if r.name.startswith(("connectors", "gui_"))]
    assert any("ready" in line for line in ours)  # the registry did log the model
    # and the HTTP client's own line for each request (it wrote the password in clear)
    requests = [r.getMessage() for r in caplog.records if r.name == "httpx2"]
    assert any(f"http://alice:***@127.0.0.1:{peer.port}/v1/chat" in line for line in requests)
    (seen,) = peer.requests
    assert seen.headers["authorization"] == "Basic " + base64.b64encode(b"alice:s3cr3t").decode()
    shown = [
        registry.default,
        provider.name,
        str(outcome.error),
        repr(registry.describe()),
        *(r.getMessage() for r in caplog.records),
    ]
    assert all("s3cr3t" not in text for text in shown)
    assert registry.default == f"openai-compatible:http://alice:***@127.0.0.1:{peer.port}/v1#qwen3"


# --- a model that cannot take tools -------------------------------------------------------------

TOOL = ToolSchema(name="run_python", description="Run Python code")


@pytest.mark.parametrize(
    "refusal",
    [
        Reply.json(
            400,
            openai_error(400, "registry.ollama.ai/library/gemma3:4b does not support tools"),
        ),
        Reply.json(
            500,
            {"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "x"}},
        ),
    ],
    ids=["ollama-gemma3", "llama.cpp-without-jinja"],
)
async def test_a_model_that_cannot_take_tools_still_chats(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps, refusal: Reply
) -> None:
    """Ollama answers every request with tools 400 for gemma3 and other models without tool
    support, and the executor always sends tools: every message failed."""
    peer.script(refusal, *[Reply.sse(*openai_text_stream(["Hello!"]))] * 2)
    prompt = [Message(role=Role.USER, content="hi")]
    async with OpenAIProvider("gemma3:4b", base_url=peer.url + "/v1", retry=fast_retry) as model:
        first = await model.generate(prompt, tools=[TOOL])
        second = await model.generate(prompt, tools=[TOOL])
    assert first.text == second.text == "Hello!"
    refused, *later = peer.requests
    assert "tools" in refused.body
    assert [("tools" in r.body, "tool_choice" in r.body) for r in later] == [(False, False)] * 2
    assert sleeps.delays == []  # asked again at once, not as a retry of a failure
    assert model.tools_refused


async def test_a_refusal_about_something_else_is_not_taken_for_no_tools(
    peer: ScriptedPeer, fast_retry: RetryPolicy
) -> None:
    peer.script(Reply.json(404, openai_error(404, "model 'gemma3:4b' not found")))
    async with OpenAIProvider("gemma3:4b", base_url=peer.url + "/v1", retry=fast_retry) as model:
        outcome = await consume(model.stream([Message(role=Role.USER, content="hi")], tools=[TOOL]))
    assert isinstance(outcome.error, ModelError) and "not found" in str(outcome.error)
    assert peer.request_count == 1 and not model.tools_refused


# --- a silent server: how long was waited ------------------------------------------------------


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_a_timeout_says_how_long_the_server_was_silent(
    peer: ScriptedPeer, vendor: str
) -> None:
    """The error said "no answer from the server in time": a person on a slow machine (a
    model still loading, a long prompt read on a CPU) did not learn what the limit was."""
    peer.script(Reply.silent(), Reply.silent())
    once = RetryPolicy(max_attempts=1)
    model: OpenAIProvider | AnthropicProvider
    if vendor == "openai":
        model = OpenAIProvider("m", base_url=peer.url + "/v1", retry=once, timeout_s=0.25)
    else:
        model = AnthropicProvider("m", api_key="k", base_url=peer.url, retry=once, timeout_s=0.25)
    prompt = [Message(role=Role.USER, content="hi")]
    async with model:
        ours = await consume(model.stream(prompt))
        asked = await consume(model.stream(prompt, settings=ModelSettings(timeout_s=0.5)))
    assert isinstance(ours.error, ModelTimeout) and isinstance(asked.error, ModelTimeout)
    assert "no answer from the server within 0.25 s" in str(ours.error)
    assert "no answer from the server within 0.5 s" in str(asked.error)


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_a_server_that_stops_sending_mid_reply_is_not_said_to_have_not_answered(
    peer: ScriptedPeer, vendor: str
) -> None:
    """It said "no answer from the server … (a model that is still loading …)" of a server
    that had begun the reply and then went quiet: it answered, and loading was not why."""
    model: OpenAIProvider | AnthropicProvider
    if vendor == "openai":
        peer.script(Reply.sse(openai_chunk({"content": "starting "}), Stall()))
        model = OpenAIProvider("m", base_url=peer.url + "/v1", timeout_s=0.3)
    else:
        peer.script(
            Reply.sse(anthropic_start(), *anthropic_text_block(0, ["starting "])[:2], Stall())
        )
        model = AnthropicProvider("m", api_key="k", base_url=peer.url, timeout_s=0.3)
    async with model:
        outcome = await consume(model.stream([Message(role=Role.USER, content="go")]))
    assert outcome.texts == ["starting "]
    assert isinstance(outcome.error, ModelTimeout)
    said = str(outcome.error)
    assert "stopped sending in the middle of the reply (nothing more for 0.3 s)" in said
    assert "no answer" not in said and "loading" not in said
    assert peer.request_count == 1  # (not asked again: the reply had begun)
