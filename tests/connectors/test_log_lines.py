"""Every line a connector logs stays one printable line, whatever it quotes.

A model name (from a config file, the environment or a local server's listing), a base URL
and the words of a server's error are text the connectors did not write: a newline in one
would start a log line of its own (a forged record), an ESC would let a terminal escape
rewrite what a person reads. They are logged through `connectors.log_text.loggable`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from connectors.anthropic import AnthropicProvider
from connectors.external import ExternalInterpreterAgent
from connectors.llama_local import LlamaLocalProvider, find_smollm2_weights, local_model_available
from connectors.log_text import loggable
from connectors.openai import OpenAIProvider
from connectors.resilience import CircuitBreaker, RetryPolicy
from gui_agent.approvals import ApprovalBroker
from gui_agent.session import Session
from schema import Message, Role, ToolSchema
from tests.connectors.peers import (
    Cut,
    FakeClock,
    Reply,
    ScriptedPeer,
    anthropic_error,
    anthropic_text_stream,
    openai_chunk,
    openai_error,
    openai_text_stream,
)

HOSTILE_MODEL = "qwen\nWARNING connectors.registry: all\u2028good\x1b[2K"
"""A model name as a hostile local server or a careless config file could give it."""
HOSTILE_MODEL_SHOWN = "qwen\\nWARNING connectors.registry: all\\u2028good\\x1b[2K"
HOSTILE_SAID = "model overloaded\x1b[1A\nERROR gui_agent.auth: alice logged in as admin"
"""A server's error words that try to erase the line above and add one of their own."""

WEATHER = ToolSchema(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


def connector_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("connectors")]


def assert_one_printable_line_each(lines: list[str], *, saying: str) -> None:
    """The scenario logged a line `saying` something, naming the model escaped, and every
    connector line is printable (no newline, ESC or line separator in it)."""
    assert any(saying in line and HOSTILE_MODEL_SHOWN in line for line in lines), lines
    for line in lines:
        assert line.isprintable(), line


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="connectors")
    return caplog


# --- loggable ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["gpt-4o-mini", "qwen2.5:0.5b", "config file /tmp/ä b\\c.toml", "模型 «β» \\n", ""],
)
def test_printable_text_is_logged_as_it_is(text: str) -> None:
    assert loggable(text) == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\nb", "a\\nb"),
        ("a\r\nb", "a\\r\\nb"),
        ("tab\there", "tab\\there"),
        ("\x1b[2Kgone", "\\x1b[2Kgone"),
        ("one\u2028two\u2029three", "one\\u2028two\\u2029three"),
        ("next\x85line", "next\\x85line"),
        ("nul\x00", "nul\\x00"),
        ("bidi\u202eevil", "bidi\\u202eevil"),
    ],
)
def test_unprintable_characters_are_logged_as_their_escapes(text: str, shown: str) -> None:
    assert loggable(text) == shown
    assert loggable(text).isprintable()


def test_anything_is_logged_as_its_text_escaped() -> None:
    error = RuntimeError("first line\nsecond line")
    assert loggable(error) == "first line\\nsecond line"
    assert loggable(42) == "42"


# --- what the providers log -------------------------------------------------------------------


@pytest.fixture
async def hostile_openai(
    peer: ScriptedPeer, fast_retry: RetryPolicy
) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(
        HOSTILE_MODEL, base_url=peer.url + "/v1", api_key="sk-test", retry=fast_retry
    )
    yield provider
    await provider.aclose()


def whole_reply(text: str) -> Reply:
    """A chat completion sent whole (JSON) in answer to a streamed request."""
    choice = {"index": 0, "message": {"role": "assistant", "content": text}}
    choice["finish_reason"] = "stop"
    return Reply.json(200, {"id": "c-1", "object": "chat.completion", "choices": [choice]})


OPENAI_SCENARIOS: dict[str, tuple[tuple[Reply, ...], str]] = {
    "a server error, retried": (
        (Reply.json(500, openai_error(500, HOSTILE_SAID, "server_error")),),
        "retrying in",
    ),
    "a model still loading, asked again": (
        (Reply.json(503, openai_error(503, f"Loading model {HOSTILE_SAID}", "unavailable")),),
        "asking again in",
    ),
    "a refusal of tools, learned from": (
        (Reply.json(400, openai_error(400, f"{HOSTILE_SAID} does not support tools")),),
        "chatting without them",
    ),
    "a refusal of stream_options": (
        (Reply.json(400, openai_error(400, f"{HOSTILE_SAID}: unknown field stream_options")),),
        "refused stream_options",
    ),
    "a whole reply instead of a stream": ((), "not an event stream"),
    "an event stream under another label": ((), "sent an event stream labelled"),
    "a stream cut after the reply": ((), "did not end cleanly"),
}


@pytest.mark.parametrize("scenario", list(OPENAI_SCENARIOS))
async def test_what_an_openai_compatible_provider_logs_stays_on_its_line(
    hostile_openai: OpenAIProvider,
    peer: ScriptedPeer,
    logged: pytest.LogCaptureFixture,
    scenario: str,
) -> None:
    """The provider's name holds the model name, and its log lines quote what the server
    said: neither starts a line of its own, and the name can still be read, escaped."""
    failures, saying = OPENAI_SCENARIOS[scenario]
    answer = Reply.sse(*openai_text_stream(["fine"]))
    if scenario == "a whole reply instead of a stream":
        answer = whole_reply("fine")
    elif scenario == "an event stream under another label":
        answer = Reply(headers={"content-type": "text/plain"}, parts=answer.parts)
    elif scenario == "a stream cut after the reply":
        finished = openai_chunk({"content": "fine"}), openai_chunk({}, finish_reason="stop")
        answer = Reply.sse(openai_chunk({"role": "assistant"}), *finished, Cut())
    peer.script(*failures, answer)
    response = await hostile_openai.generate([user("hi")], tools=[WEATHER])
    assert response.text == "fine"
    assert_one_printable_line_each(connector_lines(logged), saying=saying)
    if failures and scenario != "a refusal of stream_options":  # that one is not quoted
        assert any("\\x1b[1A" in line for line in connector_lines(logged))


async def test_what_a_claude_provider_logs_stays_on_its_line(
    peer: ScriptedPeer, fast_retry: RetryPolicy, logged: pytest.LogCaptureFixture
) -> None:
    peer.script(
        Reply.json(529, anthropic_error("overloaded_error", HOSTILE_SAID)),
        Reply.sse(*anthropic_text_stream(["fine"])),
    )
    provider = AnthropicProvider(HOSTILE_MODEL, base_url=peer.url, api_key="k", retry=fast_retry)
    try:
        response = await provider.generate([user("hi")])
    finally:
        await provider.aclose()
    assert response.text == "fine"
    lines = connector_lines(logged)
    assert_one_printable_line_each(lines, saying="retrying in")
    assert any("model overloaded\\x1b[1A" in line for line in lines)


def test_the_breaker_names_the_provider_escaped(
    clock: FakeClock, logged: pytest.LogCaptureFixture
) -> None:
    breaker = CircuitBreaker(failure_threshold=1, reset_after_s=10, clock=clock)
    breaker.record_failure()
    clock.advance(11)
    breaker.before_call(f"openai-compatible:http://127.0.0.1:9/v1#{HOSTILE_MODEL}")
    assert_one_printable_line_each(connector_lines(logged), saying="circuit half-open")


# --- an external interpreter ------------------------------------------------------------------


@dataclass
class Deps:
    """The part of AgentDeps this role uses."""

    approvals: ApprovalBroker = field(default_factory=ApprovalBroker)


class _Seen(logging.Handler):
    """Sets `arrived` when a record of `logger` comes (from whichever thread)."""

    def __init__(self, logger: str) -> None:
        super().__init__(logging.DEBUG)
        self.logger = logger
        self.arrived = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == self.logger:
            self.arrived.set()


@pytest.fixture
def external_log() -> Iterator[_Seen]:
    seen = _Seen("connectors.external")
    logger = logging.getLogger("connectors.external")
    logger.addHandler(seen)
    try:
        yield seen
    finally:
        logger.removeHandler(seen)


async def test_an_abandoned_interpreter_call_that_fails_is_logged_on_one_line(
    logged: pytest.LogCaptureFixture, external_log: _Seen
) -> None:
    """Stop while an interpreter blocks in its thread; when it then fails, its error words
    (which may quote a model or a program's output) are logged escaped."""
    entered, release = threading.Event(), threading.Event()

    class FailingLate:
        def chat_core(
            self, request: Any, display: bool = False, stream: bool = False, blocking: bool = False
        ) -> list[Any]:
            entered.set()
            release.wait(timeout=5)
            raise RuntimeError(f"the model said {HOSTILE_MODEL}")

    run = ExternalInterpreterAgent(FailingLate()).run(Session(), Deps(), user("x"))
    task = asyncio.ensure_future(anext(run))
    await asyncio.to_thread(entered.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert await asyncio.to_thread(external_log.arrived.wait, 5)
    lines = [r.getMessage() for r in logged.records if r.name == "connectors.external"]
    assert_one_printable_line_each(lines, saying="an abandoned interpreter call failed")
    assert all(r.exc_info is None for r in logged.records if r.name == "connectors.external")
    assert "RuntimeError: the model said " in lines[0]


# --- the embedded model -----------------------------------------------------------------------


@pytest.mark.llama
@pytest.mark.skipif(
    not local_model_available(), reason="llama-cpp-python or the SmolLM2 weights not installed"
)
async def test_the_weights_file_name_is_logged_escaped(
    tmp_path: Path, logged: pytest.LogCaptureFixture
) -> None:
    weights = find_smollm2_weights()
    assert weights is not None
    linked = tmp_path / f"{HOSTILE_MODEL}.gguf"
    linked.symlink_to(weights)
    await LlamaLocalProvider(linked, n_ctx=256).load()
    assert_one_printable_line_each(connector_lines(logged), saying="loaded ")
