"""A base URL that leads to a path the server does not serve, answered in the server's words.

LM Studio answers a request to a path it does not serve (a base URL without ``/v1``) with
status 200 and ``{"error": "Unexpected endpoint or method. (POST /chat/completions)"}``;
other servers answer 404 with their own words (Ollama's ``404 page not found``, vLLM's
``{"detail": "Not Found"}``, llama.cpp's ``File Not Found``). The person must read that the
URL is wrong, which URL it was, and what to check, at once: asking the same wrong path
again does not help, and it is not an unknown model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from connectors.anthropic import AnthropicProvider
from connectors.openai import OpenAIProvider
from connectors.resilience import RetryPolicy
from gui_agent.exceptions import ModelNotFound, ModelServerError
from gui_agent.quick import create_interpreter
from schema import Message, Role, RunOutcome
from tests.connectors.peers import (
    Reply,
    ScriptedPeer,
    Sleeps,
    consume,
    openai_text_stream,
    sse_data,
)
from tests.gui_agent.helpers import of_type

LM_STUDIO = {"error": "Unexpected endpoint or method. (POST /chat/completions)"}
OPENAI_HINT = "check the base URL (for OpenAI-compatible servers it usually ends in /v1)"
ANTHROPIC_HINT = "the client adds /v1/messages"


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


def text_reply(status: int, body: bytes) -> Reply:
    return Reply(
        status=status, headers={"content-type": "text/plain; charset=utf-8"}, parts=(body,)
    )


@pytest.fixture
async def openai_model(
    peer: ScriptedPeer, fast_retry: RetryPolicy
) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider("qwen3", base_url=peer.url, api_key="k", retry=fast_retry)
    yield provider
    await provider.aclose()


@pytest.fixture
async def anthropic_model(
    peer: ScriptedPeer, fast_retry: RetryPolicy
) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider("claude-test", base_url=peer.url, api_key="k", retry=fast_retry)
    yield provider
    await provider.aclose()


@pytest.mark.parametrize("status", [200, 404])
async def test_lm_studio_unexpected_endpoint_is_a_wrong_url_reported_at_once(
    openai_model: OpenAIProvider, peer: ScriptedPeer, sleeps: Sleeps, status: int
) -> None:
    peer.script(*[Reply.json(status, LM_STUDIO)] * 4)
    outcome = await consume(openai_model.stream([user("hi")]))
    said = str(outcome.error)
    assert isinstance(outcome.error, ModelNotFound)
    assert f"{peer.url}/chat/completions is not an endpoint of the API" in said
    assert "Unexpected endpoint or method. (POST /chat/completions)" in said
    assert OPENAI_HINT in said
    assert "does not know the model" not in said
    assert (peer.request_count, sleeps.delays) == (1, [])


@pytest.mark.parametrize("status", [200, 404])
async def test_anthropic_unexpected_endpoint_is_a_wrong_url_reported_at_once(
    anthropic_model: AnthropicProvider, peer: ScriptedPeer, sleeps: Sleeps, status: int
) -> None:
    peer.script(*[Reply.json(status, LM_STUDIO)] * 4)
    outcome = await consume(anthropic_model.stream([user("hi")]))
    said = str(outcome.error)
    assert isinstance(outcome.error, ModelNotFound)
    assert f"{peer.url}/v1/messages is not an endpoint of the API" in said
    assert "Unexpected endpoint or method." in said
    assert ANTHROPIC_HINT in said
    assert '{"error"' not in said
    assert (peer.request_count, sleeps.delays) == (1, [])


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (text_reply(404, b"404 page not found"), "404 page not found"),
        (Reply.json(404, {"detail": "Not Found"}), "server said: Not Found)"),
        (
            Reply.json(404, {"error": {"code": 404, "message": "File Not Found"}}),
            "File Not Found",
        ),
        (Reply.json(405, {"detail": "Method Not Allowed"}), "(HTTP 405)"),
        (Reply.sse(sse_data(LM_STUDIO)), "Unexpected endpoint"),
    ],
    ids=["ollama", "vllm", "llama.cpp", "method-not-allowed", "in-a-stream"],
)
async def test_other_servers_words_for_a_wrong_path_name_the_url(
    openai_model: OpenAIProvider, peer: ScriptedPeer, reply: Reply, words: str
) -> None:
    peer.script(*[reply] * 4)
    outcome = await consume(openai_model.stream([user("hi")]))
    said = str(outcome.error)
    assert isinstance(outcome.error, ModelNotFound)
    assert f"{peer.url}/chat/completions is not an endpoint of the API" in said
    assert words in said
    assert OPENAI_HINT in said
    assert peer.request_count == 1


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": 'model "qwen3" not found, try pulling it', "type": "api_error"}},
        {"object": "error", "message": "The model `qwen3` does not exist.", "code": 404},
    ],
    ids=["ollama", "vllm"],
)
async def test_an_unknown_model_is_still_named_as_such(
    openai_model: OpenAIProvider, peer: ScriptedPeer, body: dict[str, object]
) -> None:
    peer.script(Reply.json(404, body))
    outcome = await consume(openai_model.stream([user("hi")]))
    assert isinstance(outcome.error, ModelNotFound)
    assert "does not know the model 'qwen3' (HTTP 404); pick a model the server has" in str(
        outcome.error
    )
    assert "is not an endpoint" not in str(outcome.error)
    assert OPENAI_HINT not in str(outcome.error)  # the server named the model: the URL is right


async def test_other_bare_error_words_are_still_retried_as_a_server_error(
    openai_model: OpenAIProvider, peer: ScriptedPeer, sleeps: Sleeps
) -> None:
    peer.script(Reply.json(200, {"error": "model is loading"}), *[Reply.json(200, LM_STUDIO)])
    outcome = await consume(openai_model.stream([user("hi")]))
    assert isinstance(outcome.error, ModelNotFound)  # the second answer: no third request
    assert (peer.request_count, sleeps.delays) == (2, [0.5])
    peer.reset()
    peer.script(*[Reply.json(200, {"error": "model is loading"})] * 4)
    outcome = await consume(openai_model.stream([user("hi")]))
    assert isinstance(outcome.error, ModelServerError)
    assert peer.request_count == 4


async def test_the_error_reaches_the_chat_and_the_session_goes_on(
    openai_model: OpenAIProvider, peer: ScriptedPeer, tmp_path: Path
) -> None:
    interpreter = create_interpreter(openai_model, builtin_tools=False, workdir=tmp_path)
    peer.script(Reply.json(200, LM_STUDIO), Reply.sse(*openai_text_stream(["Hello!"])))
    failed = [e async for e in interpreter.chat("hi")]
    assert [e.outcome for e in of_type(failed, "run_finished")] == [RunOutcome.ERROR]
    (error,) = of_type(failed, "error")
    assert f"{peer.url}/chat/completions is not an endpoint" in error.message
    assert OPENAI_HINT in error.message
    assert peer.request_count == 1
    again = [e async for e in interpreter.chat("hi again")]
    assert [e.outcome for e in of_type(again, "run_finished")] == [RunOutcome.COMPLETED]
    assert interpreter.session.history[-1].content == "Hello!"
