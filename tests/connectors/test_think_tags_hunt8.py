"""Reasoning sent inside ``<think>…</think>`` at the start of the content.

vLLM without a reasoning parser, Together's DeepSeek-R1, Groq's ``raw`` reasoning format and
older LM Studio / Ollama builds send a reasoning model's thinking as part of its answer.
The person used to read the scratch work, tags and all, as the answer, and the next request
sent it back as the answer. It must show as reasoning, and the answer must be the rest.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from connectors.openai import OpenAIProvider
from connectors.openai_mapping import StreamAccumulator
from connectors.resilience import RetryPolicy
from connectors.think_tags import ThinkTags
from gui_agent.quick import create_interpreter
from schema import Message, ModelReasoningDelta, ModelTextDelta, Role, RunOutcome
from tests.connectors.peers import (
    OPENAI_DONE,
    Reply,
    ScriptedPeer,
    consume,
    openai_chunk,
    openai_text_stream,
)
from tests.gui_agent.helpers import of_type


def split(pieces: list[str]) -> tuple[str, str]:
    """(reasoning, text) of content streamed as `pieces`."""
    tags = ThinkTags()
    out = [p for piece in pieces for p in tags.feed(piece)] + tags.finish()
    return "".join(t for r, t in out if r), "".join(t for r, t in out if not r)


@pytest.mark.parametrize(
    ("pieces", "reasoning", "text"),
    [
        (["<think>\nLet me add.</think>\n\nIt is 4."], "Let me add.", "It is 4."),
        (
            ["<", "thi", "nk>", "Let me", " add.</", "think", ">\n", "\nIt is", " 4."],
            "Let me add.",
            "It is 4.",
        ),
        (["\n\n<think>x</think>y"], "x", "y"),
        (["<think></think>\n\nIt is 4."], "", "It is 4."),
        (["<think>cut off before the end </thi"], "cut off before the end </thi", ""),
    ],
    ids=["whole", "tags-split-over-pieces", "blank-before", "empty-thinking", "never-closed"],
)
def test_a_leading_think_block_is_reasoning_and_the_rest_is_the_answer(
    pieces: list[str], reasoning: str, text: str
) -> None:
    assert split(pieces) == (reasoning, text)


@pytest.mark.parametrize(
    "pieces",
    [["<b>bold</b> text"], ["Use the <think> tag ", "like </think> this."], ["<th"], ["<", "p>"]],
    ids=["html", "tag-later-in-the-text", "a-partial-tag-alone", "another-tag-split"],
)
def test_content_that_does_not_open_with_think_is_text_untouched(pieces: list[str]) -> None:
    assert split(pieces) == ("", "".join(pieces))


def test_the_accumulator_streams_the_reasoning_as_reasoning_deltas() -> None:
    acc = StreamAccumulator()
    deltas = []
    for piece in ["<think>", "Two and two", "</think>", "\n\nFour."]:
        deltas += acc.feed({"choices": [{"index": 0, "delta": {"content": piece}}]})
    deltas += acc.finish()
    assert [(type(d), d.text) for d in deltas] == [
        (ModelReasoningDelta, "Two and two"),
        (ModelTextDelta, "Four."),
    ]
    response = acc.response()
    assert (response.reasoning, response.text) == ("Two and two", "Four.")


def test_a_held_partial_tag_is_streamed_before_the_response() -> None:
    acc = StreamAccumulator()
    assert acc.feed({"choices": [{"index": 0, "delta": {"content": "<th"}}]}) == []
    assert [d.text for d in acc.finish()] == ["<th"]
    assert acc.response().text == "<th"


@pytest.fixture
async def model(peer: ScriptedPeer) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(
        "deepseek-r1", base_url=peer.url + "/v1", api_key="k", retry=RetryPolicy(max_attempts=1)
    )
    yield provider
    await provider.aclose()


async def test_over_the_wire_the_thinking_is_reasoning_and_not_sent_back_as_the_answer(
    model: OpenAIProvider, peer: ScriptedPeer, tmp_path: Path
) -> None:
    interpreter = create_interpreter(model, builtin_tools=False, workdir=tmp_path)
    peer.script(
        Reply.sse(
            openai_chunk({"role": "assistant", "content": ""}),
            openai_chunk({"content": "<think>\n"}),
            openai_chunk({"content": "They ask 2+2."}),
            openai_chunk({"content": "</think>\n\n"}),
            openai_chunk({"content": "It is 4."}),
            openai_chunk({}, finish_reason="stop"),
            OPENAI_DONE,
        ),
        Reply.sse(*openai_text_stream(["You're welcome."])),
    )
    events = [e async for e in interpreter.chat("2+2?")]
    assert [e.outcome for e in of_type(events, "run_finished")] == [RunOutcome.COMPLETED]
    deltas = of_type(events, "text_delta")
    answer = "".join(e.delta for e in deltas if e.channel == "content")
    thinking = "".join(e.delta for e in deltas if e.channel == "reasoning")
    assert (thinking, answer) == ("They ask 2+2.", "It is 4.")
    reply = interpreter.session.history[-1]
    assert (reply.content, reply.reasoning) == ("It is 4.", "They ask 2+2.")
    [e async for e in interpreter.chat("thanks")]
    sent = peer.requests[-1].body["messages"]
    assert {"role": "assistant", "content": "It is 4."} in sent
    assert "They ask" not in str(sent)


async def test_a_reply_that_is_only_a_partial_tag_still_arrives_whole(
    model: OpenAIProvider, peer: ScriptedPeer
) -> None:
    peer.script(Reply.sse(*openai_text_stream(["<", "th"])))
    outcome = await consume(model.stream([Message(role=Role.USER, content="hi")]))
    assert "".join(outcome.texts) == "<th"
    assert outcome.response.text == "<th"
