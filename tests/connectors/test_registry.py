"""Choosing models: precedence, .env, probing local servers, secrets kept out of sight."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectors.llama_local import LOCAL_MODEL_NOTICE, LlamaLocalProvider, local_model_available
from connectors.registry import (
    DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_OPENAI_MODEL,
    ECHO_NOTICE,
    LocalServer,
    ModelRegistry,
    ModelSpec,
    parse_model,
    probe_local_servers,
    resolve_models,
)
from connectors.scripted import EchoModel
from gui_agent.exceptions import ConfigError
from gui_agent.llm import LLMProvider
from tests.connectors.peers import Reply, ScriptedPeer

OPENAI_KEY = "sk-test-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdef"

needs_local_model = pytest.mark.skipif(
    not local_model_available(), reason="llama-cpp-python or the SmolLM2 weights not installed"
)


async def resolve(**kwargs: Any) -> ModelRegistry:
    """resolve_models with nothing from this machine: no .env, no probing, no local model."""
    options: dict[str, Any] = {
        "env": {},
        "dotenv_path": None,
        "probe_local": False,
        "embedded": False,
    }
    options.update(kwargs)
    return await resolve_models(**options)


@pytest.fixture
def peers() -> Iterator[list[ScriptedPeer]]:
    started: list[ScriptedPeer] = []
    yield started
    for peer in started:
        peer.stop()


def start_peer(peers: list[ScriptedPeer], *replies: Reply) -> ScriptedPeer:
    peer = ScriptedPeer().start()
    peers.append(peer)
    peer.script(*replies)
    return peer


def dead_port() -> int:
    """A loopback port nothing listens on (a peer that started and stopped)."""
    peer = ScriptedPeer().start()
    port = peer.port
    peer.stop()
    return port


# --- parse_model ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "model", "base_url"),
    [
        ("openai:gpt-4o-mini", "openai", "gpt-4o-mini", None),
        ("anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", None),
        (
            "openai-compatible:http://127.0.0.1:8080/v1#qwen2.5:0.5b",
            "openai-compatible",
            "qwen2.5:0.5b",
            "http://127.0.0.1:8080/v1",
        ),
        ("local:smollm2", "local", "smollm2", None),
        ("scripted:echo", "scripted", "echo", None),
    ],
)
def test_each_accepted_form_parses_and_its_name_parses_back(
    text: str, kind: str, model: str, base_url: str | None
) -> None:
    spec = parse_model(text, source="--model flag")
    assert (spec.kind, spec.model, spec.base_url, spec.source) == (
        kind,
        model,
        base_url,
        "--model flag",
    )
    assert spec.name == text
    assert parse_model(spec.name, source="again") == ModelSpec(kind, model, base_url, "again")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    ["gpt-4o", "azure:gpt-4o", "local:llama3", "scripted:replay", "openai-compatible:x"],
)  # (`openai:` lacks a name, which it is told: test_model_spec_wording)
def test_an_unknown_form_is_refused_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_model(text, source="config")
    message = str(error.value)
    assert text in message and "config" in message
    assert any(form in message for form in ("openai-compatible:", "local:smollm2", "scripted:echo"))


def test_a_compatible_server_needs_a_url_and_a_model() -> None:
    with pytest.raises(ConfigError, match="URL and a model"):
        parse_model("openai-compatible:http://127.0.0.1:8080/v1", source="--model flag")


# --- precedence ---------------------------------------------------------------------------


async def test_with_nothing_configured_the_echo_model_is_the_default_and_says_why() -> None:
    registry = await resolve()
    assert registry.names() == ["scripted:echo"]
    (info,) = registry.describe()
    assert info.is_default and ECHO_NOTICE in info.note
    assert isinstance(registry.get(), EchoModel)


async def test_an_openai_key_beats_an_anthropic_key_and_both_are_offered() -> None:
    registry = await resolve(env={"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY})
    assert registry.default == f"openai:{DEFAULT_OPENAI_MODEL}"
    assert registry.names() == [
        f"openai:{DEFAULT_OPENAI_MODEL}",
        f"anthropic:{DEFAULT_ANTHROPIC_MODEL}",
    ]
    default, other = registry.describe()
    assert default.is_default and "OPENAI_API_KEY in environment" in default.note
    assert not other.is_default and other.spec.source == "ANTHROPIC_API_KEY in environment"


async def test_model_and_base_url_variables_choose_the_vendor_model() -> None:
    registry = await resolve(
        env={
            "OPENAI_API_KEY": OPENAI_KEY,
            "OPENAI_MODEL": "gpt-4.1",
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
            "ANTHROPIC_MODEL": "claude-haiku-4-5",
        }
    )
    openai, anthropic = registry.describe()
    assert openai.spec == ModelSpec(
        "openai", "gpt-4.1", "http://127.0.0.1:9/v1", "OPENAI_API_KEY in environment"
    )
    assert anthropic.name == "anthropic:claude-haiku-4-5"


async def test_only_an_anthropic_key_makes_claude_the_default() -> None:
    registry = await resolve(env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY})
    assert registry.default == f"anthropic:{DEFAULT_ANTHROPIC_MODEL}"


async def test_explicit_models_come_first_in_the_order_given() -> None:
    registry = await resolve(
        explicit=["scripted:echo", "anthropic:claude-opus-4-1"],
        explicit_source="config",
        env={"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY},
    )
    assert registry.names() == [
        "scripted:echo",
        "anthropic:claude-opus-4-1",
        f"openai:{DEFAULT_OPENAI_MODEL}",
        f"anthropic:{DEFAULT_ANTHROPIC_MODEL}",
    ]
    assert registry.default == "scripted:echo"
    assert registry.describe()[0].spec.source == "config"


async def test_an_explicit_openai_model_without_a_key_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        await resolve(explicit=["openai:gpt-4o"])
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        await resolve(explicit=["anthropic:claude-sonnet-4-5"])


@needs_local_model
async def test_the_embedded_model_is_the_offline_default_with_its_notice() -> None:
    registry = await resolve(embedded=True)
    assert registry.names() == ["local:smollm2"]
    (info,) = registry.describe()
    assert info.spec.source == "built-in offline default"
    assert LOCAL_MODEL_NOTICE in info.note


@needs_local_model
async def test_the_embedded_model_is_offered_after_vendor_models() -> None:
    registry = await resolve(embedded=True, env={"OPENAI_API_KEY": OPENAI_KEY})
    assert registry.names() == [f"openai:{DEFAULT_OPENAI_MODEL}", "local:smollm2"]


# --- .env ---------------------------------------------------------------------------------


async def test_a_dotenv_file_is_read_without_touching_the_process_environment(
    tmp_path: Path,
) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text(f"OPENAI_API_KEY={OPENAI_KEY}\nOPENAI_MODEL=gpt-4o\n")
    registry = await resolve(dotenv_path=dotenv)
    (info,) = registry.describe()
    assert info.name == "openai:gpt-4o"
    assert info.spec.source == "OPENAI_API_KEY in .env file"
    assert "OPENAI_API_KEY" not in os.environ and "OPENAI_MODEL" not in os.environ


async def test_the_real_environment_wins_over_the_dotenv_file(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("OPENAI_API_KEY=sk-from-file\nOPENAI_MODEL=gpt-4o\n")
    registry = await resolve(
        dotenv_path=dotenv, env={"OPENAI_API_KEY": OPENAI_KEY, "OPENAI_MODEL": ""}
    )
    (info,) = registry.describe()
    # An empty real variable still wins: the model falls back to the default, not the file.
    assert info.name == f"openai:{DEFAULT_OPENAI_MODEL}"
    assert info.spec.source == "OPENAI_API_KEY in environment"


async def test_a_missing_dotenv_file_is_fine(tmp_path: Path) -> None:
    registry = await resolve(dotenv_path=tmp_path / "absent.env")
    assert registry.names() == ["scripted:echo"]


# --- probing local servers ------------------------------------------------------------------


async def test_probing_finds_servers_that_answer_in_the_order_given(
    peers: list[ScriptedPeer],
) -> None:
    openai_style = start_peer(
        peers, Reply.json(200, {"object": "list", "data": [{"id": "tiny"}, {"id": "other"}]})
    )
    old_ollama = start_peer(
        peers,
        Reply.json(404, {"error": "not found"}),
        Reply.json(200, {"models": [{"name": "llama3.2:1b"}]}),
    )
    servers = [
        LocalServer("LM Studio", openai_style.port),
        LocalServer("Nobody", dead_port()),
        LocalServer("Ollama", old_ollama.port),
    ]
    found = await probe_local_servers(servers, timeout_s=2.0)
    assert found == [
        ModelSpec(
            "openai-compatible",
            "tiny",
            f"http://127.0.0.1:{openai_style.port}/v1",
            f"LM Studio answering on 127.0.0.1:{openai_style.port}",
        ),
        ModelSpec(
            "openai-compatible",
            "llama3.2:1b",
            f"http://127.0.0.1:{old_ollama.port}/v1",
            f"Ollama answering on 127.0.0.1:{old_ollama.port}",
        ),
    ]
    assert [r.path for r in openai_style.requests] == ["/v1/models"]
    assert [r.path for r in old_ollama.requests] == ["/v1/models", "/api/tags"]


async def test_a_server_that_never_answers_costs_only_the_timeout(
    peers: list[ScriptedPeer],
) -> None:
    silent = start_peer(peers, Reply.silent())
    found = await asyncio.wait_for(
        probe_local_servers([LocalServer("Stuck", silent.port)], timeout_s=0.2), 5
    )
    assert found == []


async def test_a_local_server_ranks_below_keys_and_above_the_embedded_model(
    peers: list[ScriptedPeer],
) -> None:
    server = start_peer(peers, Reply.json(200, {"data": [{"id": "tiny"}]}))
    registry = await resolve(
        env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY},
        probe_local=True,
        local_servers=[LocalServer("Ollama", server.port)],
        probe_timeout_s=2.0,
        embedded=local_model_available(),
    )
    expected = [
        f"anthropic:{DEFAULT_ANTHROPIC_MODEL}",
        f"openai-compatible:http://127.0.0.1:{server.port}/v1#tiny",
    ]
    if local_model_available():
        expected.append("local:smollm2")
    assert registry.names() == expected


async def test_probing_is_loopback_only() -> None:
    with pytest.raises(ConfigError, match="loopback"):
        await probe_local_servers([LocalServer("Remote", 11434, host="192.168.1.10")])


# --- providers, counters, secrets ------------------------------------------------------------


async def test_providers_are_built_once_and_cached() -> None:
    registry = await resolve(env={"OPENAI_API_KEY": OPENAI_KEY}, explicit=["scripted:echo"])
    echo = registry.get("scripted:echo")
    assert registry.get("scripted:echo") is echo
    openai = registry.get(f"openai:{DEFAULT_OPENAI_MODEL}")
    assert isinstance(openai, LLMProvider)
    assert registry.get(f"openai:{DEFAULT_OPENAI_MODEL}") is openai
    with pytest.raises(ConfigError, match="unknown model"):
        registry.get("openai:gpt-5")


async def test_a_compatible_server_never_receives_the_openai_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[dict[str, Any]] = []

    class Recorder:
        def __init__(self, model: str, **kwargs: Any) -> None:
            seen.append({"model": model, **kwargs})

    monkeypatch.setattr("connectors.openai.OpenAIProvider", Recorder)
    registry = await resolve(
        env={"OPENAI_API_KEY": OPENAI_KEY},
        explicit=["openai-compatible:http://127.0.0.1:8080/v1#tiny"],
    )
    registry.get("openai-compatible:http://127.0.0.1:8080/v1#tiny")
    registry.get(f"openai:{DEFAULT_OPENAI_MODEL}")
    compatible, openai = seen
    assert compatible["base_url"] == "http://127.0.0.1:8080/v1"
    assert compatible["api_key"] != OPENAI_KEY
    assert openai["api_key"] == OPENAI_KEY


async def test_keys_never_appear_in_descriptions_reprs_or_logs(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    dotenv = tmp_path / ".env"
    dotenv.write_text(f"ANTHROPIC_API_KEY={ANTHROPIC_KEY}\n")
    registry = await resolve(env={"OPENAI_API_KEY": OPENAI_KEY}, dotenv_path=dotenv)
    for name in registry.names():
        registry.get(name)
    shown = " ".join([repr(registry), *(repr(info) for info in registry.describe()), caplog.text])
    assert registry.names() and "openai:" in shown
    assert OPENAI_KEY not in shown and ANTHROPIC_KEY not in shown


async def test_token_counters_follow_the_model() -> None:
    registry = await resolve(env={"OPENAI_API_KEY": OPENAI_KEY})
    counter = registry.token_counter()
    assert counter.count_text("hello world") > 0
    assert counter.estimated is False  # gpt-4o-mini: tiktoken's own encoding


@needs_local_model
async def test_the_local_model_counts_with_its_own_tokenizer() -> None:
    registry = await resolve(embedded=True)
    assert isinstance(registry.get("local:smollm2"), LlamaLocalProvider)
    counter = registry.token_counter("local:smollm2")
    assert "SmolLM2" in counter.name and counter.estimated is False
    assert counter.count_text("hello world") > 0


async def test_adding_a_model_later_makes_it_pickable() -> None:
    registry = await resolve()
    name = registry.add(ModelSpec("scripted", "echo", None, "settings page"))
    assert name == "scripted:echo" and registry.names() == ["scripted:echo"]
    added = registry.add(parse_model("openai-compatible:http://127.0.0.1:1234/v1#m", source="ui"))
    assert registry.names() == ["scripted:echo", added]
    assert registry.default == "scripted:echo"
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        registry.add(parse_model("openai:gpt-4o", source="ui"))


# --- log lines ---------------------------------------------------------------------------------

FORGED = "qwen\nWARNING connectors.openai: all\u2028good\x1b[2K"
"""A model name as a hostile local server or a careless config file could give it: a newline
that starts a log line of its own, a terminal escape that erases one, a line separator."""
FORGED_SHOWN = "qwen\\nWARNING connectors.openai: all\\u2028good\\x1b[2K"


def registry_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "connectors.registry"]


async def test_model_names_and_sources_cannot_forge_log_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every line the registry logs about a model stays one line: a newline or an escape in
    its name or source is written as its escape, and the name is still there to read."""
    caplog.set_level(logging.DEBUG, logger="connectors.registry")
    text = f"openai-compatible:http://127.0.0.1:9/v1#{FORGED}"
    registry = await resolve(explicit=[text, text], explicit_source="config file /tmp/a\nb.toml")
    registry.get()  # "ready" line
    lines = registry_lines(caplog)
    assert len(lines) == 3  # already registered, ready, the startup line
    for line in lines:
        assert not any(c in line for c in "\n\r\x1b\u2028"), line
        assert FORGED_SHOWN in line and "/tmp/a\\nb.toml" in line, line
    assert (
        f"model openai-compatible:http://127.0.0.1:9/v1#{FORGED_SHOWN} [default] "
        "(config file /tmp/a\\nb.toml)"
    ) in lines
    assert registry.names() == [f"openai-compatible:http://127.0.0.1:9/v1#{FORGED}"]


async def test_a_model_name_a_local_server_lists_cannot_forge_log_lines(
    peers: list[ScriptedPeer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="connectors.registry")
    server = start_peer(peers, Reply.json(200, {"data": [{"id": FORGED}]}))
    registry = await resolve(
        probe_local=True, local_servers=[LocalServer("Ollama", server.port)], probe_timeout_s=2.0
    )
    assert registry.spec(registry.default).model == FORGED  # offered as the server named it
    (line,) = registry_lines(caplog)
    assert "\n" not in line and "\x1b" not in line and FORGED_SHOWN in line


async def test_ordinary_model_names_are_logged_as_they_are(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="connectors.registry")
    await resolve(explicit=["scripted:echo"], explicit_source="config file /tmp/ä b\\c.toml")
    assert registry_lines(caplog) == [
        "model scripted:echo [default] (config file /tmp/ä b\\c.toml)"
    ]
