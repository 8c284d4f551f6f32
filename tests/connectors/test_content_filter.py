"""A reply the provider's content filter stops (OpenAI's finish reason `content_filter`) or
the model refuses (Claude's stop reason `refusal`) is marked `filtered`, and every front end
says so beside it. It used to look like a complete reply, or an empty bubble with no word
why."""

from __future__ import annotations

from pathlib import Path

from backends.gradio.looks import FILTERED_MARK
from backends.gradio.renderer import ChatView
from backends.streamlit.view import FILTERED_NOTE, entries_of
from connectors.anthropic import AnthropicProvider
from connectors.openai import OpenAIProvider
from connectors.resilience import RetryPolicy
from gui_agent.agents.model_call import FILTERED
from gui_agent.llm import LLMProvider
from gui_agent.quick import create_interpreter
from gui_agent.repl_display import FILTERED_NOTE as TERMINAL_NOTE
from gui_agent.repl_display import format_event
from schema import MessageCompleted, MessageStatus, Role, RunOutcome
from tests.connectors.peers import (
    OPENAI_DONE,
    Reply,
    ScriptedPeer,
    anthropic_end,
    anthropic_start,
    anthropic_text_block,
    openai_chunk,
)


def openai_at(peer: ScriptedPeer) -> OpenAIProvider:
    return OpenAIProvider("m", base_url=peer.url + "/v1", retry=RetryPolicy(max_attempts=1))


async def filtered_turn(model: LLMProvider, tmp_path: Path) -> list[object]:
    interpreter = create_interpreter(model, builtin_tools=False, workdir=tmp_path)
    events = [e async for e in interpreter.chat("tell me")]
    history = interpreter.session.history
    reply = history[-1]
    assert reply.role is Role.ASSISTANT and reply.status is MessageStatus.COMPLETE
    assert reply.metadata.get(FILTERED) is True
    finished = [e for e in events if getattr(e, "type", "") == "run_finished"]
    assert [e.outcome for e in finished] == [RunOutcome.COMPLETED]
    # Each front end says it: the page, the terminal, Streamlit (React: history.js).
    shown = [m["content"][0]["text"] for m in ChatView.from_history([*history]).messages()]
    assert FILTERED_MARK in shown[-1]
    assert f"[{TERMINAL_NOTE}]" in (format_event(MessageCompleted(message=reply)) or "")
    assert FILTERED_NOTE in entries_of([reply])[-1].notes
    return [reply.content]


async def test_a_reply_the_content_filter_stopped_is_marked_and_said(
    peer: ScriptedPeer, tmp_path: Path
) -> None:
    peer.script(
        Reply.sse(
            openai_chunk({"role": "assistant", "content": "I was say"}),
            openai_chunk({}, finish_reason="content_filter"),
            OPENAI_DONE,
        )
    )
    model = openai_at(peer)
    assert await filtered_turn(model, tmp_path) == ["I was say"]  # what it wrote is kept


async def test_an_empty_reply_the_content_filter_stopped_is_not_a_blank_bubble(
    peer: ScriptedPeer, tmp_path: Path
) -> None:
    peer.script(
        Reply.sse(
            openai_chunk({"role": "assistant", "content": ""}),
            openai_chunk({}, finish_reason="content_filter"),
            OPENAI_DONE,
        )
    )
    model = openai_at(peer)
    assert await filtered_turn(model, tmp_path) == [""]


async def test_a_claude_refusal_is_marked_and_said(peer: ScriptedPeer, tmp_path: Path) -> None:
    peer.script(
        Reply.sse(
            anthropic_start(),
            *anthropic_text_block(0, ["I can't help with th"]),
            *anthropic_end("refusal"),
        )
    )
    model = AnthropicProvider(
        "claude-test", api_key="k", base_url=peer.url, retry=RetryPolicy(max_attempts=1)
    )
    assert await filtered_turn(model, tmp_path) == ["I can't help with th"]


async def test_an_openai_refusal_is_marked_and_said(peer: ScriptedPeer, tmp_path: Path) -> None:
    """OpenAI sends a refusal in the delta's `refusal` field, then finish reason `stop`: it
    was shown as a complete, ordinary reply."""
    peer.script(
        Reply.sse(
            openai_chunk({"role": "assistant", "refusal": "I'm sorry, I can't help with that."}),
            openai_chunk({}, finish_reason="stop"),
            OPENAI_DONE,
        )
    )
    model = openai_at(peer)
    assert await filtered_turn(model, tmp_path) == ["I'm sorry, I can't help with that."]
