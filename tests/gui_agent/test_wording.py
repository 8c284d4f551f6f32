"""Why AutoChat stopped, said in words for people (the event keeps the reason's code): the
reason, then what its detail adds, never the detail twice; and the other words every front
end says alike (role names, the labels of prompts written in the person's place)."""

from __future__ import annotations

import pytest

from gui_agent.autochat import AutoRun
from gui_agent.session import Session
from gui_agent.wording import (
    autochat_stop_words,
    autochat_stopped,
    counted,
    crew_title,
    prompt_label,
    role_title,
)
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
            "used 5,120 of 5,000 tokens",
            "its token budget ran out (used 5,120 of 5,000 tokens)",
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


def test_a_crew_members_replies_are_the_crews_under_the_members_name() -> None:
    """Not the role its calls are made as: the reviewer's read as "Thought"."""
    assert crew_title("reviewer") == "Crew · reviewer"
    assert crew_title("") == "Crew"  # (a member whose name is not known yet)


def test_the_stop_sentence_says_how_many_automatic_turns_ran_and_why() -> None:
    """The pages said it; the terminal said only "it reached its limit of automatic turns"."""
    assert autochat_stopped(2, R.MAX_TURNS, "reached 2 automatic turns") == (
        "AutoChat stopped after 2 automatic turns: it reached its limit of automatic turns"
    )
    assert autochat_stopped(1, R.TOKEN_BUDGET, "used 11,025 of 8,000 tokens") == (
        "AutoChat stopped after 1 automatic turn: its token budget ran out "
        "(used 11,025 of 8,000 tokens)"
    )


def test_a_prompt_written_in_the_persons_place_is_labelled_by_who_wrote_it() -> None:
    task = {"delegated_by": "call-1", "worker": "AGENT_EXECUTOR"}
    assert prompt_label(task) == "Task for Executor"
    assert prompt_label({"crew_member": "reviewer", "crew_agent": "THOUGHT"}) == (
        "Crew, over to the reviewer"
    )
    assert prompt_label({"autochat": True, "autochat_turn": 2}) == "AutoChat turn 2"
    assert prompt_label({"autochat": True}) == "AutoChat"
    assert prompt_label({"plan_step": 1, "plan_steps": 3, "step": "read"}) == "Plan step 1/3"
    assert prompt_label({}) == ""  # the person's own
