"""A stream whose reply is over but whose end never comes cleanly.

Once the model said it finished (OpenAI's finish_reason, Anthropic's stop_reason), a server
that goes silent or drops the connection before ``[DONE]`` / ``message_stop`` has still
given the whole reply: the reply is kept and the turn completes, instead of an error after
the full answer was shown. Before that point, silence and a cut stay errors.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from connectors.anthropic import AnthropicProvider
from connectors.openai import OpenAIProvider
from connectors.resilience import RetryPolicy
from gui_agent.exceptions import ModelTimeout
from gui_agent.quick import create_interpreter
from schema import Message, Role, RunOutcome, Usage
from tests.connectors.peers import (
    Cut,
    Part,
    Reply,
    ScriptedPeer,
    Stall,
    anthropic_end,
    anthropic_start,
    anthropic_text_block,
    consume,
    openai_chunk,
)
from tests.gui_agent.helpers import of_type

SHORT_S = 0.2
"""The after-finish wait in these tests (the stream's own silence limit is much longer)."""


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


@pytest.fixture
async def openai_model(peer: ScriptedPeer) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(
        "gpt-test",
        base_url=peer.url + "/v1",
        api_key="k",
        retry=RetryPolicy(max_attempts=1),
        timeout_s=30.0,
    )
    provider.after_finish_s = SHORT_S
    yield provider
    await provider.aclose()


@pytest.fixture
async def anthropic_model(peer: ScriptedPeer) -> AsyncIterator[AnthropicProvider]:
    provider = AnthropicProvider(
        "claude-test",
        base_url=peer.url,
        api_key="k",
        retry=RetryPolicy(max_attempts=1),
        timeout_s=30.0,
    )
    provider.after_finish_s = SHORT_S
    yield provider
    await provider.aclose()


def openai_finished(end: Part) -> Reply:
    return Reply.sse(
        openai_chunk({"role": "assistant", "content": "All "}),
        openai_chunk({"content": "done."}),
        openai_chunk({}, finish_reason="stop"),
        openai_chunk(usage=(12, 3)),
        end,
    )


def anthropic_finished(end: Part) -> Reply:
    delta, _stop = anthropic_end(output_tokens=3)
    return Reply.sse(anthropic_start(12), *anthropic_text_block(0, ["All ", "done."]), delta, end)


@pytest.mark.parametrize("end", [Stall(), Cut()], ids=["silent", "cut"])
async def test_openai_a_finished_reply_is_kept_when_the_stream_does_not_end_cleanly(
    openai_model: OpenAIProvider, peer: ScriptedPeer, end: Part
) -> None:
    peer.script(openai_finished(end))
    outcome = await asyncio.wait_for(consume(openai_model.stream([user("hi")])), 10)
    assert outcome.response.text == "All done."
    assert outcome.response.finish_reason == "stop"
    assert outcome.response.usage == Usage(input_tokens=12, output_tokens=3, requests=1)
    if isinstance(end, Stall):  # the connection the server held open is closed
        assert await asyncio.to_thread(peer.disconnected.wait, 5.0)
    assert openai_model.breaker.consecutive_failures == 0


@pytest.mark.parametrize("label", ["application/json", "text/plain; charset=utf-8"])
async def test_a_finished_reply_under_another_label_is_kept_when_the_server_goes_silent(
    openai_model: OpenAIProvider, anthropic_model: AnthropicProvider, peer: ScriptedPeer, label: str
) -> None:
    relabelled = [openai_finished(Stall()), anthropic_finished(Stall())]
    peer.script(*(Reply(headers={"content-type": label}, parts=r.parts) for r in relabelled))
    for model in (openai_model, anthropic_model):
        outcome = await asyncio.wait_for(consume(model.stream([user("hi")])), 10)
        assert outcome.response.text == "All done."
        assert outcome.response.usage.output_tokens == 3


@pytest.mark.parametrize("end", [Stall(), Cut()], ids=["silent", "cut"])
async def test_anthropic_a_finished_reply_is_kept_when_message_stop_never_comes(
    anthropic_model: AnthropicProvider, peer: ScriptedPeer, end: Part
) -> None:
    peer.script(anthropic_finished(end))
    outcome = await asyncio.wait_for(consume(anthropic_model.stream([user("hi")])), 10)
    assert outcome.response.text == "All done."
    assert outcome.response.finish_reason == "stop"
    assert outcome.response.usage.output_tokens == 3


async def test_silence_before_the_finish_is_still_a_timeout(peer: ScriptedPeer) -> None:
    provider = OpenAIProvider(
        "gpt-test",
        base_url=peer.url + "/v1",
        api_key="k",
        retry=RetryPolicy(max_attempts=1),
        timeout_s=0.3,
    )
    provider.after_finish_s = 30.0  # must not apply: the model has not finished
    peer.script(Reply.sse(openai_chunk({"content": "Half"}), Stall()))
    try:
        outcome = await asyncio.wait_for(consume(provider.stream([user("hi")])), 10)
    finally:
        await provider.aclose()
    assert outcome.texts == ["Half"]
    assert isinstance(outcome.error, ModelTimeout)


async def test_the_turn_completes_and_the_next_one_runs(
    openai_model: OpenAIProvider, peer: ScriptedPeer, tmp_path: Path
) -> None:
    interpreter = create_interpreter(openai_model, workdir=tmp_path)
    peer.script(openai_finished(Stall()), openai_finished(Cut()))
    for text in ("first", "second"):
        events = [e async for e in interpreter.chat(text)]
        assert [e.outcome for e in of_type(events, "run_finished")] == [RunOutcome.COMPLETED]
        assert not of_type(events, "error")
    replies = [m.content for m in interpreter.session.history if m.role is Role.ASSISTANT]
    assert replies == ["All done.", "All done."]
