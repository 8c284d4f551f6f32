"""The React front end (`history.js`, run in Node) shows a model call being asked again with
the reply being written, in the same words as the other front ends (`retry_words`), until
the reply's text streams or the reply is filed."""

from __future__ import annotations

from typing import Any

from gui_agent.retry_words import retry_words
from schema import ModelRetrying
from tests.backends.react.node_script import run_with_history
from tests.backends.react.test_react_history import message, run, session_detail

SCRIPT = """
import { retryWords } from %s;
console.log(JSON.stringify(JSON.parse(process.argv[1]).map(retryWords)));
"""


def words_in_node(events: list[dict[str, Any]]) -> list[str]:
    result: list[str] = run_with_history(SCRIPT, events)
    return result


def retrying(attempt: int, wait_s: float, reason: str, message_id: str = "a1") -> dict[str, Any]:
    event = ModelRetrying(
        message_id=message_id, attempt=attempt, max_attempts=4, wait_s=wait_s, reason=reason
    )
    return event.model_dump(mode="json")


def test_the_words_are_those_of_the_other_front_ends() -> None:
    events = [
        retrying(2, 20.0, "rate limited (HTTP 429)"),
        retrying(3, 0.37, "server error (HTTP 503)"),
        retrying(2, 7.5, "no answer within 60 s"),
        retrying(1, 5.0, "the server is still loading the model"),
        retrying(4, 150.0, "rate limited (HTTP 429)"),
        retrying(2, 0.0, "the connection to the server failed"),
    ]
    python = [retry_words(ModelRetrying.model_validate(e)) for e in events]
    assert words_in_node(events) == python
    assert python[0] == "Rate limited (HTTP 429): asking again in 20 s (attempt 2 of 4)…"


def test_the_reply_being_written_says_why_until_its_text_streams() -> None:
    reply = message("a1", "assistant", "Hello", agent="AGENT_EXECUTOR")
    events = [
        {"type": "state_changed", "to_state": "RUNNING"},
        {"type": "message_started", "message_id": "a1", "agent": "AGENT_EXECUTOR"},
        retrying(2, 20.0, "rate limited (HTTP 429)"),
        retrying(3, 20.0, "rate limited (HTTP 429)"),
        retrying(2, 1.0, "rate limited (HTTP 429)", message_id="zz"),  # not a reply being written
        {"type": "text_delta", "message_id": "a1", "delta": "Hello"},
        retrying(4, 20.0, "rate limited (HTTP 429)"),  # (late: the reply has begun)
        {"type": "message_completed", "message": reply},
        {"type": "state_changed", "to_state": "STOP"},
    ]
    detail = session_detail(title="", events=events)
    seen = run(detail)["seen"]
    live = [s["live"] for s in seen]
    said = "Rate limited (HTTP 429): asking again in 20 s (attempt {} of 4)…"
    assert live[1] == [{"id": "a1", "agent": "AGENT_EXECUTOR", "text": "", "reasoning": ""}]
    assert live[2][0]["retrying"] == said.format(2)
    assert live[3][0]["retrying"] == said.format(3)
    assert live[4] == live[3]
    assert live[5] == [{"id": "a1", "agent": "AGENT_EXECUTOR", "text": "Hello", "reasoning": ""}]
    assert live[6] == live[5]
    assert live[7] == []
    assert all(s["problem"] is None for s in seen)  # no error
