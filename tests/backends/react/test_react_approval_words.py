"""The React front end (`history.js`, run in Node) says the approval choice and what an
approval decided in the words of the other front ends (`gui_agent.wording`): "this chat",
never the decision's code (`allow_session`), in the conversation's notes."""

from __future__ import annotations

from typing import Any

import pytest

from gui_agent.wording import ALLOW_FOR_THIS_CHAT, confirmation_words
from tests.backends.react.node_script import run_with_history
from tests.backends.react.test_react_history import message, run, session_detail

SCRIPT = """
import { ALLOW_FOR_THIS_CHAT, confirmationWords } from %s;
const cases = JSON.parse(process.argv[1]);
console.log(JSON.stringify({
  choice: ALLOW_FOR_THIS_CHAT,
  said: cases.map(([content, decision, by]) => confirmationWords(content, decision, by)),
}));
"""

CASES = [
    ("Run Python code: allow_session (go ahead)", "allow_session", "user"),
    ("Run Python code: allow_once", "allow_once", "user"),
    ("Write a file: deny (no answer in time)", "deny", "timeout"),
    ("Write a file: deny", "deny", "policy"),
    ("Something: maybe", "maybe", None),  # (a decision a newer version made)
]


def in_node(cases: list[tuple[str, str, str | None]]) -> dict[str, Any]:
    result: dict[str, Any] = run_with_history(SCRIPT, cases)
    return result


def test_the_words_are_those_of_the_other_front_ends() -> None:
    out = in_node(CASES)
    assert out["choice"] == ALLOW_FOR_THIS_CHAT == "Allow for this chat"
    assert out["said"] == [confirmation_words(*case) for case in CASES]
    assert out["said"][0] == "✓ Allowed for this chat · Run Python code (go ahead)"


@pytest.mark.parametrize("decision", ["allow_session", "allow_once", "deny"])
def test_a_confirmation_in_the_history_says_its_decision_in_words(decision: str) -> None:
    asked = message("a1", "assistant", "", agent="AGENT_EXECUTOR")
    decided = message(
        "k1",
        "assistant",
        f"Run Python code: {decision}",
        type="confirmation",
        metadata={"decision": decision, "by": "user", "display_only": True},
    )
    [entry] = run(session_detail([asked, decided]))["entries"]
    [note] = entry["notes"]
    assert decision not in note and note.endswith(" · Run Python code")
    assert "session" not in note
