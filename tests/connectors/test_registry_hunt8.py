"""Model strings as people type them: spaces, the kind's case, and URLs that cannot work.

A URL with a space around it used to be kept with the space (every request then went to a
path the server does not serve); one with no host or an impossible port was accepted and
failed only at the first message; the endpoint itself pasted as the base URL
(``.../v1/chat/completions``) was accepted and sent every request to
``.../chat/completions/chat/completions``. Each must be refused at once, saying what to
give instead, or (spaces, case) simply understood.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from connectors.registry import (
    LocalServer,
    ModelSpec,
    parse_model,
    probe_local_servers,
    resolve_models,
)
from gui_agent.exceptions import ConfigError, ModelAuthError
from schema import Message, Role
from tests.connectors.peers import Reply, ScriptedPeer, consume


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        (
            "openai-compatible: http://127.0.0.1:1234/v1/ # qwen2.5-7b ",
            ModelSpec("openai-compatible", "qwen2.5-7b", "http://127.0.0.1:1234/v1", "t"),
        ),
        ("OpenAI:gpt-4o-mini", ModelSpec("openai", "gpt-4o-mini", None, "t")),
        (" anthropic : claude-sonnet-4-5", ModelSpec("anthropic", "claude-sonnet-4-5", None, "t")),
        (
            "openai-compatible:HTTPS://openrouter.ai/api/v1#meta-llama/llama-3.1-8b-instruct",
            ModelSpec(
                "openai-compatible",
                "meta-llama/llama-3.1-8b-instruct",
                "HTTPS://openrouter.ai/api/v1",
                "t",
            ),
        ),
    ],
    ids=["spaces-and-slash", "kind-case", "spaces-around-kind", "scheme-case"],
)
def test_spaces_and_the_kinds_case_are_understood_and_the_name_parses_back(
    text: str, spec: ModelSpec
) -> None:
    parsed = parse_model(text, source="t")
    assert parsed == spec
    assert parse_model(parsed.name, source="t") == spec
    assert " " not in (parsed.base_url or "")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "openai-compatible:http://127.0.0.1:1234/v1/chat/completions#qwen",
            "ends in the endpoint /chat/completions, which the client adds itself; "
            "give the base URL http://127.0.0.1:1234/v1",
        ),
        ("openai-compatible:http:///v1#qwen", "names no host"),
        ("openai-compatible:http://127.0.0.1:99999/v1#qwen", "not a valid URL"),
        ("openai-compatible:http://my server:8080/v1#qwen", "contains a space"),
    ],
    ids=["endpoint-pasted", "no-host", "bad-port", "space-in-host"],
)
def test_a_url_that_cannot_be_a_base_url_is_refused_saying_why(text: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_model(text, source="--model flag")
    said = str(caught.value)
    assert text in said and "--model flag" in said
    assert problem in said
    # an example of the form, unless the URL to give is said already (two read as a stutter)
    example = "openai-compatible:http://127.0.0.1:8080/v1#MODEL"
    assert (example in said) == ("give the base URL" not in problem)


async def test_resolving_refuses_such_a_url_before_any_request() -> None:
    with pytest.raises(ConfigError, match="which the client adds itself"):
        await resolve_models(
            explicit=["openai-compatible:http://127.0.0.1:1/v1/chat/completions#m"],
            env={},
            dotenv_path=None,
            probe_local=False,
            embedded=False,
        )


# --- a hosted compatible server refusing the key --------------------------------------------


@pytest.mark.parametrize("status", [401, 200])
async def test_a_refused_key_on_a_compatible_server_names_the_variable_it_comes_from(
    peer: ScriptedPeer, status: int
) -> None:
    """OpenRouter, Groq or Together behind openai-compatible: the key they get comes from
    OPENAI_COMPATIBLE_API_KEY (never OPENAI_API_KEY), so that is the variable to set."""
    refused = {"error": {"message": "Invalid API Key", "type": "invalid_request_error"}}
    refused["error"]["code"] = "invalid_api_key"
    peer.script(Reply.json(status, refused))
    name = f"openai-compatible:{peer.url}/v1#llama-3.1-8b-instant"
    registry = await resolve_models(
        explicit=[name],
        env={"OPENAI_API_KEY": "sk-not-for-them"},
        dotenv_path=None,
        probe_local=False,
        embedded=False,
    )
    provider = registry.get(name)
    try:
        outcome = await consume(provider.stream([Message(role=Role.USER, content="hi")]))
    finally:
        await provider.aclose()  # type: ignore[attr-defined]
    assert isinstance(outcome.error, ModelAuthError)
    said = str(outcome.error)
    assert "Set OPENAI_COMPATIBLE_API_KEY to a valid key" in said
    assert "OPENAI_API_KEY to" not in said
    assert "Invalid API Key" in said
    assert peer.requests[0].headers["authorization"] == "Bearer no-key-needed"


# --- probing: an embedding model is no chat model --------------------------------------------


@pytest.fixture
def local_peer() -> Iterator[ScriptedPeer]:
    server = ScriptedPeer().start()
    yield server
    server.stop()


async def test_probing_passes_over_embedding_models_to_the_first_chat_model(
    local_peer: ScriptedPeer,
) -> None:
    """LM Studio lists the embedding model it ships with; Ollama lists a pulled
    nomic-embed-text first when it is the newest. Chatting with either fails."""
    listed = ["text-embedding-nomic-embed-text-v1.5", "bge-reranker-v2-m3", "qwen2.5-7b-instruct"]
    local_peer.script(Reply.json(200, {"object": "list", "data": [{"id": m} for m in listed]}))
    found = await probe_local_servers([LocalServer("LM Studio", local_peer.port)], timeout_s=2.0)
    assert [(spec.model, spec.base_url) for spec in found] == [
        ("qwen2.5-7b-instruct", f"{local_peer.url}/v1")
    ]


async def test_a_server_with_only_embedding_models_offers_none(local_peer: ScriptedPeer) -> None:
    local_peer.script(
        Reply.json(404, {"error": "not found"}),
        Reply.json(200, {"models": [{"name": "nomic-embed-text:latest"}]}),
    )
    found = await probe_local_servers([LocalServer("Ollama", local_peer.port)], timeout_s=2.0)
    assert found == []
    assert [r.path for r in local_peer.requests] == ["/v1/models", "/api/tags"]
