"""The React front end (`history.js`, run in Node) shows why a reply has not begun when it
opens the chat during a model's retry wait: from the reply being written as the session
detail (or a stream's hello) gives it (`retrying`), not only from the next notice, which
may come a minute later or never."""

from __future__ import annotations

from typing import Any

from gui_agent.retry_words import retry_words
from schema import ModelRetrying
from tests.backends.react.test_react_history import message, run, session_detail

NOTICE = ModelRetrying(
    message_id="a1", attempt=2, max_attempts=4, wait_s=12.3, reason="rate limited (HTTP 429)"
)
SAID = "Rate limited (HTTP 429): asking again in 13 s (attempt 2 of 4)…"


def opened_during(streaming: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[Any]:
    """What the page shows of the replies being written after `chatFrom(detail)` and each
    of `events` (the first a no-op, to see the chat as opened)."""
    detail = session_detail(
        [message("u1", "user", "hi")],
        title="",
        streaming=streaming,
        events=[{"type": "keepalive"}, *events],
    )
    return [seen["live"] for seen in run(detail)["seen"]]


def writing(**fields: Any) -> dict[str, Any]:
    return message("a1", "assistant", "", agent="AGENT_EXECUTOR", status="interrupted", **fields)


def test_a_chat_opened_during_a_retry_wait_says_why_at_once() -> None:
    assert retry_words(NOTICE) == SAID  # (the same words as the other front ends)
    notice = NOTICE.model_dump(mode="json")
    later = {**notice, "attempt": 3, "wait_s": 20.0}
    live = opened_during(
        [writing(retrying=notice)],
        [later, {"type": "text_delta", "message_id": "a1", "delta": "Hello"}],
    )
    shown = {"id": "a1", "agent": "AGENT_EXECUTOR", "text": "", "reasoning": ""}
    assert live[0] == [{**shown, "retrying": SAID}]
    assert live[1] == [{**shown, "retrying": SAID.replace("13 s", "20 s").replace("2 of", "3 of")}]
    assert live[2] == [{**shown, "text": "Hello"}]


def test_a_reply_that_has_begun_or_was_never_asked_again_shows_no_notice() -> None:
    notice = NOTICE.model_dump(mode="json")
    live = opened_during(
        [
            writing(retrying=None),
            {**writing(retrying=notice), "id": "a2", "content": "Hi"},  # (its text wins)
            {**writing(), "id": "a3", "reasoning": "hmm", "retrying": notice},
            {**writing(), "id": "a4"},  # (a server from before `retrying`)
        ],
        [],
    )
    assert all("retrying" not in reply for reply in live[0]), live[0]
    assert [reply["text"] for reply in live[0]] == ["", "Hi", "", ""]
