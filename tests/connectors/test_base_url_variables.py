"""`OPENAI_BASE_URL` and `ANTHROPIC_BASE_URL` are checked as `--model openai-compatible:URL` is.

QA found them taken as given: without ``http://`` every turn was tried four times and fed the
circuit breaker before failing with the transport's ``UnsupportedProtocol``; a pasted
``/chat/completions`` (or Claude's ``/v1/messages``) doubled the endpoint; a quoted value with
a trailing space in a `.env` file went out as ``/v1%20/chat/completions``. Now a model its key
configures is left out saying why (the rest still start), an explicit `openai:`/`anthropic:`
model is refused, and a request URL that can never work is neither retried nor counted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.anthropic import AnthropicProvider
from connectors.openai import OpenAIProvider
from connectors.registry import resolve_models
from connectors.resilience import BreakerState, RetryPolicy
from gui_agent.exceptions import CircuitOpen, ConfigError, ModelError
from schema import Message, Role
from tests.connectors.peers import Reply, ScriptedPeer, Sleeps, openai_text_stream


def hello() -> list[Message]:
    return [Message(role=Role.USER, content="hello")]


@pytest.mark.parametrize(
    ("variables", "said"),
    [
        (
            {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "127.0.0.1:18607/v1"},
            "does not start with http:// or https:// (e.g. http://127.0.0.1:18607/v1)",
        ),
        (
            {
                "OPENAI_API_KEY": "sk-test",
                "OPENAI_BASE_URL": "http://127.0.0.1:18607/v1/chat/completions",
            },
            "give the base URL http://127.0.0.1:18607/v1",
        ),
        (
            {"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": "https://gw.test/v1/messages"},
            "ends in the endpoint /v1/messages, which the client adds itself; "
            "give the base URL https://gw.test",
        ),
        (
            {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "ftp://127.0.0.1/v1"},
            "only http:// and https:// URLs are served "
            "(write it as OPENAI_BASE_URL=http://127.0.0.1:8080/v1)",
        ),
    ],
    ids=["no-scheme", "openai-endpoint", "anthropic-endpoint", "other-scheme"],
)
async def test_a_key_configured_model_with_a_bad_base_url_is_left_out_saying_what_to_write(
    variables: dict[str, str], said: str
) -> None:
    registry = await resolve_models(
        explicit=["scripted:echo"],
        env=variables,
        dotenv_path=None,
        probe_local=False,
        embedded=False,
    )
    assert registry.names() == ["scripted:echo"]  # the rest still starts
    (why,) = registry.left_out
    variable = next(name for name in variables if name.endswith("_BASE_URL"))
    assert f"{variable} (in the environment)" in why
    assert "is not offered" in why and said in why


async def test_a_bad_base_url_in_the_env_file_is_named_there_and_the_other_vendor_still_works(
    tmp_path: Path,
) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text(
        "OPENAI_API_KEY=sk-test\nOPENAI_BASE_URL=localhost:11434/v1\n"
        "ANTHROPIC_API_KEY=sk-ant\nANTHROPIC_BASE_URL=http://127.0.0.1:9\n"
    )
    registry = await resolve_models(env={}, dotenv_path=dotenv, probe_local=False, embedded=False)
    assert registry.names() == ["anthropic:claude-sonnet-4-5"]
    (why,) = registry.left_out
    assert why.startswith("openai:gpt-4o-mini (from OPENAI_API_KEY in .env file) is not offered")
    assert "OPENAI_BASE_URL (in the .env file)" in why and "http://localhost:11434/v1" in why


@pytest.mark.parametrize(
    ("model", "variables", "said"),
    [
        (
            "openai:gpt-4o",
            {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "127.0.0.1:18607/v1"},
            "e.g. http://127.0.0.1:18607/v1",
        ),
        (
            "anthropic:claude-opus-4-1",
            {"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/v1/messages"},
            "give the base URL http://127.0.0.1:9",
        ),
    ],
    ids=["openai", "anthropic"],
)
async def test_an_explicit_vendor_model_with_a_bad_base_url_variable_is_refused(
    model: str, variables: dict[str, str], said: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        await resolve_models(
            explicit=[model], env=variables, dotenv_path=None, probe_local=False, embedded=False
        )
    message = str(caught.value)
    assert message.startswith(f"{model} (from --model flag): ")
    assert "_BASE_URL (in the environment)" in message and said in message


async def test_a_password_in_a_refused_base_url_is_not_shown() -> None:
    registry = await resolve_models(
        env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "u:hunter2@127.0.0.1:8080/v1"},
        dotenv_path=None,
        probe_local=False,
        embedded=False,
    )
    (why,) = registry.left_out
    assert "hunter2" not in why and "http://u:***@127.0.0.1:8080/v1" in why


async def test_a_base_url_variable_nothing_uses_is_not_checked() -> None:
    registry = await resolve_models(
        explicit=["scripted:echo"],
        env={"OPENAI_BASE_URL": "127.0.0.1:18607/v1"},  # no OPENAI_API_KEY: no OpenAI model
        dotenv_path=None,
        probe_local=False,
        embedded=False,
    )
    assert registry.names() == ["scripted:echo"] and registry.left_out == ()


async def test_a_quoted_base_url_with_spaces_in_the_env_file_reaches_the_endpoint(
    peer: ScriptedPeer, tmp_path: Path
) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text(f'OPENAI_API_KEY=sk-test\nOPENAI_BASE_URL=" {peer.url}/v1/ "\n')
    registry = await resolve_models(env={}, dotenv_path=dotenv, probe_local=False, embedded=False)
    assert registry.spec("openai:gpt-4o-mini").base_url == f"{peer.url}/v1"
    peer.script(Reply.sse(*openai_text_stream(["ok"])))
    provider = registry.get()
    assert isinstance(provider, OpenAIProvider)
    try:
        reply = await provider.generate(hello())
    finally:
        await provider.aclose()
    assert reply.text == "ok"
    (seen,) = peer.requests
    assert seen.path == "/v1/chat/completions"


@pytest.mark.parametrize("vendor", [OpenAIProvider, AnthropicProvider])
@pytest.mark.parametrize("url", ["127.0.0.1:9/v1", "ftp://127.0.0.1:9/v1"])
async def test_a_request_url_that_cannot_work_is_not_retried_nor_counted_by_the_breaker(
    vendor: type[OpenAIProvider] | type[AnthropicProvider], url: str
) -> None:
    """A base URL given in code (not checked at start): every turn fails at once, saying to
    check the base URL, and the breaker never pauses the model for it."""
    sleeps = Sleeps()
    provider = vendor("m", api_key="k", base_url=url, retry=RetryPolicy(sleep=sleeps))
    threshold = provider.breaker.failure_threshold
    try:
        for _ in range(threshold + 1):
            with pytest.raises(ModelError) as caught:
                await provider.generate(hello())
            assert not isinstance(caught.value, CircuitOpen)
            assert not caught.value.retryable
            assert "check the base URL" in str(caught.value)
    finally:
        await provider.aclose()
    assert sleeps.delays == []  # one attempt each: no backoff
    assert provider.breaker.state is BreakerState.CLOSED
    assert provider.breaker.consecutive_failures == 0
