"""What only the OpenAI service (api.openai.com) is sent, decided by the base URL's host.

The o-series and gpt-5 models refuse ``max_tokens`` (they take ``max_completion_tokens``),
while many compatible servers know only ``max_tokens``; the OpenAI service takes user
messages in a row, which many local chat templates refuse; and only the service needs a
key. Each choice follows the host, however the URL is written and wherever it came from
(``base_url``, ``OPENAI_BASE_URL``, the registry).

The requests go over real HTTP to the scripted peer: in these tests api.openai.com resolves
to the loopback address, so a URL naming the service reaches the peer, on its port.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from connectors.openai import OpenAIProvider
from connectors.openai_mapping import is_openai_service
from connectors.registry import resolve_models
from connectors.resilience import RetryPolicy
from gui_agent.exceptions import ConfigError
from schema import ImagePart, Message, ModelSettings, Role
from tests.connectors.peers import Reply, ScriptedPeer, openai_text_stream
from tests.connectors.wire_rules import alternation_problems

PNG = ImagePart(media_type="image/png", data="UE5H")


@pytest.fixture
def openai_resolves_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """api.openai.com (in any case) resolves to 127.0.0.1 for this test."""
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.lower().rstrip(".") == "api.openai.com":
            host = "127.0.0.1"
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)


def user(text: str, *images: ImagePart) -> Message:
    return Message(role=Role.USER, content=text, images=images)


async def sent_body(provider: OpenAIProvider, peer: ScriptedPeer, **settings: Any) -> Any:
    """The body of the one request `provider` sends for a short two-user-turn history."""
    peer.script(Reply.sse(*openai_text_stream(["ok"])))
    history = [user("first try"), user("again, with a picture", PNG)]
    try:
        await provider.generate(history, settings=ModelSettings(**settings))
    finally:
        await provider.aclose()
    (seen,) = peer.requests
    return seen.body


@pytest.mark.parametrize(
    ("url", "service"),
    [
        ("https://api.openai.com/v1", True),
        ("https://API.OpenAI.com/v1/", True),
        ("https://api.openai.com:443/v1//", True),
        ("api.openai.com/v1", True),
        ("https://api.openai.com./v1", True),
        ("http://127.0.0.1:8080/v1", False),
        ("https://api.openai.com.example.net/v1", False),
        ("https://example.net/api.openai.com/v1", False),
        ("https://openrouter.ai/api/v1", False),
    ],
)
def test_the_service_is_known_by_its_host_however_the_url_is_written(
    url: str, service: bool
) -> None:
    assert is_openai_service(url) is service


@pytest.mark.parametrize(
    "written", ["http://api.openai.com:{port}/v1", "http://API.OpenAI.COM:{port}/v1/"]
)
@pytest.mark.usefixtures("openai_resolves_here")
async def test_a_base_url_naming_the_service_gets_max_completion_tokens(
    peer: ScriptedPeer, written: str
) -> None:
    url = written.format(port=peer.port)
    provider = OpenAIProvider("o3-mini", api_key="sk-test", base_url=url, retry=RetryPolicy(1))
    body = await sent_body(provider, peer, max_tokens=64)
    assert body["max_completion_tokens"] == 64
    assert "max_tokens" not in body


@pytest.mark.parametrize(
    ("host", "field"),
    [("api.openai.com", "max_completion_tokens"), ("127.0.0.1", "max_tokens")],
)
@pytest.mark.usefixtures("openai_resolves_here")
async def test_openai_base_url_in_the_environment_decides_the_field_too(
    peer: ScriptedPeer, monkeypatch: pytest.MonkeyPatch, host: str, field: str
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://{host}:{peer.port}/v1")
    provider = OpenAIProvider("gpt-5", api_key="sk-test", retry=RetryPolicy(1))
    body = await sent_body(provider, peer, max_tokens=32)
    assert body[field] == 32
    assert {"max_tokens", "max_completion_tokens"} & set(body) == {field}


@pytest.mark.usefixtures("openai_resolves_here")
async def test_the_model_configured_by_openai_base_url_gets_max_completion_tokens(
    peer: ScriptedPeer,
) -> None:
    env = {
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": f"http://api.openai.com:{peer.port}/v1",
        "OPENAI_MODEL": "o4-mini",
    }
    registry = await resolve_models(env=env, dotenv_path=None, probe_local=False, embedded=False)
    provider = registry.get()
    assert isinstance(provider, OpenAIProvider)
    body = await sent_body(provider, peer, max_tokens=16)
    assert body["max_completion_tokens"] == 16
    assert "max_tokens" not in body


async def test_a_compatible_server_gets_max_tokens(peer: ScriptedPeer) -> None:
    provider = OpenAIProvider("qwen3", base_url=peer.url + "/v1", retry=RetryPolicy(1))
    body = await sent_body(provider, peer, max_tokens=64)
    assert body["max_tokens"] == 64
    assert "max_completion_tokens" not in body


def test_the_service_named_by_its_url_still_needs_a_key() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIProvider("gpt-4o-mini", base_url="https://API.openai.com/v1/")


async def test_a_compatible_server_named_only_by_openai_base_url_needs_no_key(
    peer: ScriptedPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", peer.url + "/v1")
    provider = OpenAIProvider("qwen3", retry=RetryPolicy(1))
    await sent_body(provider, peer)
    assert peer.requests[0].headers["authorization"] == "Bearer no-key-needed"


# --- user turns in a row ----------------------------------------------------------------


async def test_a_compatible_server_gets_user_turns_in_a_row_as_one(peer: ScriptedPeer) -> None:
    provider = OpenAIProvider("qwen3", base_url=peer.url + "/v1", retry=RetryPolicy(1))
    body = await sent_body(provider, peer)
    assert alternation_problems(body["messages"]) == []
    (merged,) = body["messages"]
    assert merged["role"] == "user"
    assert merged["content"] == [
        {"type": "text", "text": "first try\n\nagain, with a picture"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,UE5H"}},
    ]


@pytest.mark.usefixtures("openai_resolves_here")
async def test_the_service_gets_user_turns_in_a_row_as_they_are(peer: ScriptedPeer) -> None:
    url = f"http://api.openai.com:{peer.port}/v1"
    provider = OpenAIProvider("gpt-5", api_key="sk-test", base_url=url, retry=RetryPolicy(1))
    body = await sent_body(provider, peer)
    assert body["messages"][0]["content"] == "first try"
    assert [m["role"] for m in body["messages"]] == ["user", "user"]


async def test_a_server_known_to_take_user_turns_in_a_row_can_be_sent_them(
    peer: ScriptedPeer,
) -> None:
    provider = OpenAIProvider("qwen3", base_url=peer.url + "/v1", retry=RetryPolicy(1))
    provider.consecutive_user_turns = True
    body = await sent_body(provider, peer)
    assert [m["role"] for m in body["messages"]] == ["user", "user"]
