"""A model call asked again shows, with the reply being written, why and when, in the same
words on the Gradio page, in Streamlit and in the terminal; the line goes once the reply's
text streams, the next notice replaces it, and the filed reply takes its place."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from backends.gradio.renderer import ChatView
from backends.gradio.stream import _catch_up
from backends.streamlit.view import LiveReply
from connectors.function import FunctionInfo, FunctionModel
from gui_agent.quick import create_interpreter
from gui_agent.repl_display import format_event
from gui_agent.retry_words import retry_words, wait_words
from schema import (
    AgentName,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    ModelRetrying,
    ModelRetryNotice,
    Role,
    RunFinished,
    RunOutcome,
    TextDelta,
)

RATE_LIMITED = "Rate limited (HTTP 429): asking again in 20 s (attempt 2 of 4)…"


def retrying(
    attempt: int = 2, wait_s: float = 20.0, reason: str = "rate limited (HTTP 429)"
) -> ModelRetrying:
    return ModelRetrying(
        message_id="m1",
        agent=AgentName.AGENT_EXECUTOR,
        attempt=attempt,
        max_attempts=4,
        wait_s=wait_s,
        reason=reason,
    )


def test_the_words_say_why_when_and_which_attempt() -> None:
    assert retry_words(retrying()) == RATE_LIMITED
    assert (
        retry_words(retrying(4, 0.3, "no answer within 60 s"))
        == "No answer within 60 s: asking again in 1 s (attempt 4 of 4)…"
    )
    # A server still loading its model is asked again without an attempt being counted.
    loading = retrying(1, 2.0, "the server is still loading the model")
    assert retry_words(loading) == "The server is still loading the model: asking again in 2 s…"
    assert [wait_words(s) for s in (0.5, 1.0, 7.2, 119.0, 120.0, 150.0)] == [
        "1 s",
        "1 s",
        "8 s",
        "119 s",
        "2 min",
        "3 min",
    ]


# --- terminal ----------------------------------------------------------------------------


def test_the_terminal_says_it_on_the_replys_row_then_the_reply_goes_on_below() -> None:
    """After `[Executor] ` (message_started), each notice fills that row and opens the
    next under the same label, where the reply's text (or the next notice) goes."""
    started = format_event(MessageStarted(message_id="m1", agent=AgentName.AGENT_EXECUTOR))
    shown = "".join(
        text
        for event in (retrying(), retrying(3), TextDelta(message_id="m1", delta="Hello"))
        if (text := format_event(event)) is not None
    )
    assert (str(started) + shown).splitlines() == [
        "",
        f"[Executor] ⟳ {RATE_LIMITED}",
        f"[Executor] ⟳ {RATE_LIMITED.replace('attempt 2', 'attempt 3')}",
        "[Executor] Hello",
    ]


# --- Gradio ------------------------------------------------------------------------------


def texts(view: ChatView) -> list[str]:
    return [str(message["content"][0]["text"]) for message in view.messages()]


def test_the_page_shows_the_retry_in_the_reply_being_written_until_text_streams() -> None:
    view = ChatView()
    view.apply(MessageStarted(message_id="m1", agent=AgentName.AGENT_EXECUTOR))
    assert view.apply(retrying())
    [shown] = texts(view)
    assert f'<span class="ga-retry">{RATE_LIMITED}</span>' in shown
    assert view.apply(retrying(3))  # the next notice replaces it
    [shown] = texts(view)
    assert "attempt 3 of 4" in shown and "attempt 2 of 4" not in shown
    view.apply(TextDelta(message_id="m1", delta="Hello"))
    [shown] = texts(view)
    assert "ga-retry" not in shown and shown.endswith("Hello")
    assert not view.apply(retrying(4))  # (a late notice cannot cover the reply)


def test_the_filed_reply_replaces_the_retry_line() -> None:
    view = ChatView()
    view.apply(MessageStarted(message_id="m1", agent=AgentName.AGENT_EXECUTOR))
    view.apply(retrying())
    assert any("ga-retry" in text for text in texts(view))
    failed = Message(
        id="m1",
        role=Role.ASSISTANT,
        content="",
        agent=AgentName.AGENT_EXECUTOR,
        status=MessageStatus.ERROR,
    )
    view.apply(MessageCompleted(message=failed))
    assert not any("ga-retry" in text for text in texts(view))


def test_reasoning_ends_the_retry_line_too() -> None:
    view = ChatView()
    view.apply(MessageStarted(message_id="m1", agent=AgentName.AGENT_EXECUTOR))
    view.apply(retrying())
    assert any("ga-retry" in text for text in texts(view))
    view.apply(TextDelta(message_id="m1", delta="hmm", channel="reasoning"))
    assert not any("ga-retry" in text for text in texts(view))


async def test_a_tab_opened_while_the_model_is_asked_again_sees_why(tmp_path: Path) -> None:
    """A page built mid-turn (a reload) catches up on the reply being written: the notice
    the provider gave before the reply began is shown too."""
    release = asyncio.Event()

    async def parts() -> AsyncIterator[str | ModelRetryNotice]:
        yield ModelRetryNotice(
            attempt=2, max_attempts=4, wait_s=20.0, reason="rate limited (HTTP 429)"
        )
        await release.wait()
        yield "done"

    def rate_limited(messages: list[Message], info: FunctionInfo) -> AsyncIterator[object]:
        return parts()

    model = FunctionModel(rate_limited)  # type: ignore[arg-type]
    interpreter = create_interpreter(model, builtin_tools=False, workdir=tmp_path)
    try:
        async with interpreter.subscribe() as events:
            await interpreter.send("hi")
            async for event in events.until_idle():
                if isinstance(event, ModelRetrying):
                    break
            chat = ChatView.from_history(interpreter.session.history)
            _catch_up(chat, interpreter)
            assert any(RATE_LIMITED in text for text in texts(chat))
            release.set()
    finally:
        await interpreter.close()


# --- Streamlit ---------------------------------------------------------------------------


def test_streamlit_shows_the_retry_until_the_reply_streams() -> None:
    live = LiveReply()
    live.apply(MessageStarted(message_id="m1"))
    assert live.apply(retrying())
    assert live.retrying == RATE_LIMITED
    assert live.apply(TextDelta(message_id="m1", delta="Hi"))
    assert live.retrying == "" and live.text == "Hi"


def test_streamlit_drops_the_retry_line_when_the_turn_ends() -> None:
    live = LiveReply()
    live.apply(MessageStarted(message_id="m1"))
    live.apply(retrying())
    assert live.apply(RunFinished(outcome=RunOutcome.ERROR))
    assert live.retrying == ""
    assert not live.apply(RunFinished(outcome=RunOutcome.ERROR))  # nothing more to redraw
