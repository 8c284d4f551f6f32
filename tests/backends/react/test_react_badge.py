"""The React front end's state badge (`history.js`, run in Node): while AutoChat waits
between two of its turns it says a turn is coming, in the words of the other front ends,
from the session's detail (a tab opened during the wait) and from the events; its state's
words again once AutoChat stops; and no turn counts as running during the wait."""

from __future__ import annotations

from typing import Any

from backends.gradio.panels import BETWEEN_TURNS
from gui_agent.wording import AUTOCHAT_BETWEEN_TURNS
from tests.backends.react.node_script import run_with_history
from tests.backends.react.test_react_history import session_detail

SCRIPT = """
import { BETWEEN_TURNS, applyEvent, badgeWords, chatFrom } from %s;
const detail = JSON.parse(process.argv[1]);
let chat = chatFrom(detail);
const seen = [{words: badgeWords(chat), busy: chat.busy, autochat: chat.autochatActive}];
for (const event of detail.events) {
  chat = applyEvent(chat, event);
  seen.push({words: badgeWords(chat), busy: chat.busy, autochat: chat.autochatActive});
}
console.log(JSON.stringify({between: BETWEEN_TURNS, seen}));
"""


def badges(detail: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = run_with_history(SCRIPT, detail)
    return result


def autochat_on(detail: dict[str, Any]) -> dict[str, Any]:
    detail["session"]["autochat"] = {"enabled": True, "max_turns": 3, "delay_s": 30}
    return detail


def state(to: str) -> dict[str, Any]:
    return {"type": "state_changed", "to_state": to}


def test_the_words_are_those_of_the_other_front_ends() -> None:
    out = badges(session_detail())
    assert out["between"] == AUTOCHAT_BETWEEN_TURNS == BETWEEN_TURNS


def test_autochat_between_its_turns_is_said_from_the_events_until_it_stops() -> None:
    events = [
        state("RUNNING"),  # the person's message, with AutoChat on: a run begins
        state("STOP"),
        {"type": "autochat_turn", "turn": 1, "max_turns": 3, "remaining": 2},
        state("RUNNING"),
        state("STOP"),
        {"type": "autochat_turn", "turn": 2, "max_turns": 3, "remaining": 1},
        {"type": "autochat_stopped", "reason": "stopped", "turns": 1, "detail": ""},
    ]
    seen = badges(autochat_on(session_detail(events=events)))["seen"]
    words = [s["words"] for s in seen]
    between = AUTOCHAT_BETWEEN_TURNS
    assert words == [
        "Your turn",
        "Working…",
        between,  # the turn ended; AutoChat's next one is coming
        between,
        "Working…",
        between,
        between,
        "Your turn",  # Stop ended AutoChat: nothing more is coming
    ]
    assert [s["busy"] for s in seen] == [False, True, False, False, True, False, False, False]
    assert [s["autochat"] for s in seen] == [False] + [True] * 6 + [False]


def test_a_tab_opened_during_the_wait_says_so_and_its_stop_is_heard() -> None:
    detail = autochat_on(session_detail())
    # the server's `busy` is true during the wait (the run goes on), yet no turn runs
    detail.update(busy=True, autochat_active=True)
    detail["events"] = [{"type": "autochat_stopped", "reason": "stopped", "turns": 0}]
    seen = badges(detail)["seen"]
    assert seen == [
        {"words": AUTOCHAT_BETWEEN_TURNS, "busy": False, "autochat": True},
        {"words": "Your turn", "busy": False, "autochat": False},
    ]


def test_a_turn_without_autochat_ends_in_the_persons_turn() -> None:
    events = [state("RUNNING"), state("WAITING"), state("RUNNING"), state("STOP")]
    seen = badges(session_detail(events=events))["seen"]
    assert [s["words"] for s in seen] == [
        "Your turn",
        "Working…",
        "Waiting for your approval",
        "Working…",
        "Your turn",
    ]
    assert not any(s["autochat"] for s in seen)
