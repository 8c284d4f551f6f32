"""Servers that answer a streamed request with a JSON document instead of an event stream.

Some local servers send an error as ``{"error": {...}}`` with status 200 (and
``application/json``) where a stream was asked for, or ignore ``stream`` and send the whole
reply. The SDKs find no events in such a body; the person must still read what the server
said, and the error must mean what its code says (retry a model that is loading, ask for a
key on an auth error).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from connectors.anthropic import AnthropicProvider
from connectors.openai import OpenAIProvider
from connectors.resilience import RetryPolicy
from gui_agent.exceptions import (
    ModelAuthError,
    ModelError,
    ModelNotFound,
    ModelResponseError,
    ModelServerError,
)
from schema import Message, Role, ToolCall
from tests.connectors.peers import (
    Reply,
    ScriptedPeer,
    Sleeps,
    anthropic_text_stream,
    consume,
    openai_text_stream,
)

ONE_TRY = RetryPolicy(max_attempts=1)
JSON = {"content-type": "application/json"}


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


@pytest.fixture
async def openai_model(peer: ScriptedPeer) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider("qwen3", base_url=peer.url + "/v1", api_key="k", retry=ONE_TRY)
    yield provider
    await provider.aclose()


@pytest.fixture
async def anthropic_model(peer: ScriptedPeer) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider("claude-test", base_url=peer.url, api_key="k", retry=ONE_TRY)
    yield provider
    await provider.aclose()


# --- OpenAI-compatible servers ------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kind", "said"),
    [
        ({"error": {"message": "model not loaded"}}, ModelServerError, "model not loaded"),
        ({"error": "model not loaded"}, ModelServerError, "model not loaded"),
        (
            {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}},
            ModelServerError,
            "HTTP 503",
        ),
        (
            {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}},
            ModelAuthError,
            "OPENAI_API_KEY",
        ),
        (
            {"error": {"message": "no model 'qwen3'", "type": "not_found_error"}},
            ModelNotFound,
            "no model 'qwen3'",
        ),
        (
            {"error": {"message": "context too long", "type": "invalid_request_error"}},
            ModelError,
            "context too long",
        ),
    ],
    ids=["message", "bare-string", "llama.cpp-503", "bad-key", "unknown-model", "bad-request"],
)
async def test_an_error_sent_with_status_200_says_what_the_server_said(
    openai_model: OpenAIProvider,
    peer: ScriptedPeer,
    body: dict[str, Any],
    kind: type[ModelError],
    said: str,
) -> None:
    peer.script(Reply.json(200, body))
    outcome = await consume(openai_model.stream([user("hi")]))
    assert type(outcome.error) is kind
    assert said in str(outcome.error)
    assert "without any stream data" not in str(outcome.error)


async def test_a_model_still_loading_is_retried_until_it_answers(
    peer: ScriptedPeer, fast_retry: RetryPolicy, sleeps: Sleeps
) -> None:
    loading = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}
    peer.script(Reply.json(200, loading), Reply.sse(*openai_text_stream(["Ready."])))
    async with OpenAIProvider("m", base_url=peer.url + "/v1", api_key="k", retry=fast_retry) as p:
        outcome = await consume(p.stream([user("hi")]))
    assert outcome.response.text == "Ready."
    assert sleeps.delays == [0.5]


async def test_a_whole_reply_sent_instead_of_a_stream_is_taken(
    openai_model: OpenAIProvider, peer: ScriptedPeer
) -> None:
    call: dict[str, Any] = {"id": "call_1", "type": "function"}
    call["function"] = {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "qwen3-8b",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Let me look.", "tool_calls": [call]},
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
    }
    peer.script(Reply.json(200, completion))
    outcome = await consume(openai_model.stream([user("weather in Oslo?")]))
    assert outcome.texts == ["Let me look."]
    response = outcome.response
    assert response.tool_calls == (
        ToolCall(id="call_1", name="get_weather", arguments='{"city": "Oslo"}'),
    )
    assert (response.finish_reason, response.model) == ("tool_calls", "qwen3-8b")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (20, 9)


async def test_an_event_stream_labelled_json_still_arrives(
    openai_model: OpenAIProvider, peer: ScriptedPeer
) -> None:
    peer.script(Reply(headers=JSON, parts=openai_text_stream(["Hel", "lo"], usage=(4, 2))))
    outcome = await consume(openai_model.stream([user("hi")]))
    assert outcome.texts == ["Hel", "lo"]
    assert outcome.response.usage.output_tokens == 2


async def test_json_that_is_neither_reply_nor_error_is_quoted_and_not_retried(
    peer: ScriptedPeer, fast_retry: RetryPolicy
) -> None:
    peer.script(Reply.json(200, {"detail": "Method Not Allowed"}))
    async with OpenAIProvider("m", base_url=peer.url + "/v1", api_key="k", retry=fast_retry) as p:
        outcome = await consume(p.stream([user("hi")]))
    assert isinstance(outcome.error, ModelResponseError)
    assert "Method Not Allowed" in str(outcome.error)
    assert peer.request_count == 1


# --- Anthropic-compatible servers -----------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kind", "said"),
    [
        (
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ModelServerError,
            "Overloaded",
        ),
        ({"error": {"message": "model not loaded"}}, ModelError, "model not loaded"),
        ({"type": "message", "content": []}, ModelResponseError, '"type": "message"'),
    ],
    ids=["anthropic-error", "other-error", "not-a-stream"],
)
async def test_anthropic_json_instead_of_a_stream_says_what_the_server_said(
    anthropic_model: AnthropicProvider,
    peer: ScriptedPeer,
    body: dict[str, Any],
    kind: type[ModelError],
    said: str,
) -> None:
    peer.script(Reply.json(200, body))
    outcome = await consume(anthropic_model.stream([user("hi")]))
    assert type(outcome.error) is kind
    assert said in str(outcome.error)


async def test_an_anthropic_event_stream_labelled_json_still_arrives(
    anthropic_model: AnthropicProvider, peer: ScriptedPeer
) -> None:
    peer.script(Reply(headers=JSON, parts=anthropic_text_stream(["Hel", "lo"])))
    outcome = await consume(anthropic_model.stream([user("hi")]))
    assert outcome.texts == ["Hel", "lo"]
    assert outcome.response.text == "Hello"
