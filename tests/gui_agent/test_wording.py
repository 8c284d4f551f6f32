"""Why AutoChat stopped, said in words for people (the event keeps the reason's code): the
reason, then what its detail adds, never the detail twice."""

from __future__ import annotations

import pytest

from gui_agent.autochat import AutoRun
from gui_agent.session import Session
from gui_agent.wording import autochat_stop_words, counted, role_title
from schema import AgentName, AutoChatSettings, AutoChatStopReason, RunOutcome

R = AutoChatStopReason


@pytest.mark.parametrize(
    ("reason", "detail", "words"),
    [
        (R.TASK_COMPLETE, "wrote notes.md", "the task is done: wrote notes.md"),
        (R.TASK_COMPLETE, "done", "the task is done"),
        (R.MAX_TURNS, "reached 5 automatic turns", "it reached its limit of automatic turns"),
        (
            R.TOKEN_BUDGET,
            "used 5120 of 5000 tokens",
            "its token budget ran out (used 5120 of 5000 tokens)",
        ),
        (R.TIME_BUDGET, "ran 61.0s of 60.0s", "its time budget ran out (ran 61.0s of 60.0s)"),
        (R.ERROR, "the last turn failed", "a turn failed"),
        (R.ERROR, "the model server is down", "a turn failed (the model server is down)"),
        (R.USER_MESSAGE, "the person sent a message", "you sent a message"),
        (R.STOPPED, "stopped by the user", "stopped by the user"),
        (R.STOPPED, "the user was removed", "the user was removed"),
        (R.STOPPED, "", "it was stopped"),
        (R.DISABLED, "AutoChat was switched off", "it was switched off"),
    ],
)
def test_each_reason_is_said_in_words_with_what_its_detail_adds(
    reason: AutoChatStopReason, detail: str, words: str
) -> None:
    assert autochat_stop_words(reason, detail) == words


def test_every_reason_has_words_of_its_own() -> None:
    said = {autochat_stop_words(reason) for reason in AutoChatStopReason}
    assert len(said) == len(AutoChatStopReason)
    assert not any("_" in words for words in said)  # no code such as max_turns


@pytest.mark.parametrize("outcome", [RunOutcome.COMPLETED, RunOutcome.ERROR])
def test_the_details_the_core_gives_are_not_said_twice(outcome: RunOutcome) -> None:
    """The details AutoRun writes for a reason the words already say are left out."""
    session = Session(autochat=AutoChatSettings(enabled=True, max_turns=1))
    run = AutoRun()
    run.begin(session, "the goal")
    run.turns = 1
    stop = run.stop_reason(session, outcome)
    assert stop is not None
    words = autochat_stop_words(*stop)
    assert words in ("it reached its limit of automatic turns", "a turn failed")


def test_counted_says_one_and_many() -> None:
    assert counted(1, "turn") == "1 turn"
    assert counted(12_345, "byte") == "12,345 bytes"


def test_every_role_has_the_name_people_read_and_a_name_that_is_no_role_stays_as_it_is() -> None:
    titles = {agent: role_title(agent) for agent in AgentName}
    assert titles == {
        AgentName.AGENT_EXECUTOR: "Executor",
        AgentName.LLM_PLANNER: "Planner",
        AgentName.SUPERVISOR: "Supervisor",
        AgentName.THOUGHT: "Thought",
        AgentName.CREW: "Crew",
        AgentName.OTHER: "Other",
    }
    assert [role_title(agent.value) for agent in AgentName] == list(titles.values())
    assert role_title("a worker") == "a worker"  # (a name a model wrote, not a role)
