"""The Streamlit front end, following a chat it opened mid-turn, shows why the reply being
written has not begun when its model is asked again: from the session detail's `streaming`
(`LiveReply.following`). Its events start after the detail's `last_seq`, past the notice,
so the first (often the only) notice was never shown."""

from __future__ import annotations

from backends.streamlit.view import LiveReply
from schema import (
    AgentName,
    MessageStatus,
    ModelRetrying,
    Role,
    StreamingReply,
    TextDelta,
)

NOTICE = ModelRetrying(
    message_id="a1", attempt=2, max_attempts=4, wait_s=9.2, reason="rate limited (HTTP 429)"
)


def writing(content: str = "", **fields: object) -> StreamingReply:
    return StreamingReply.model_validate(
        {
            "id": "a1",
            "role": Role.ASSISTANT,
            "agent": AgentName.AGENT_EXECUTOR,
            "status": MessageStatus.INTERRUPTED,
            "content": content,
            **fields,
        }
    )


def test_a_tab_that_follows_during_a_retry_wait_says_why_until_the_reply_streams() -> None:
    live = LiveReply.following([writing(retrying=NOTICE)])
    assert live.retrying == "Rate limited (HTTP 429): asking again in 10 s (attempt 2 of 4)…"
    assert live.text == ""
    assert live.apply(TextDelta(message_id="a1", delta="Hello"))
    assert (live.retrying, live.text) == ("", "Hello")


def test_a_reply_that_has_begun_or_was_never_asked_again_shows_its_text_only() -> None:
    assert LiveReply.following([writing("Hi", retrying=NOTICE)]).retrying == ""
    assert LiveReply.following([writing(reasoning="hmm", retrying=NOTICE)]).retrying == ""
    never = LiveReply.following([writing("Hi")])
    assert (never.retrying, never.text) == ("", "Hi")
    assert LiveReply.following([]) == LiveReply()
