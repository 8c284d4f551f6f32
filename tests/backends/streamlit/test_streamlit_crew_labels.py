"""Who the Streamlit front end says wrote a crew's replies (`backends.streamlit.view`): the
crew member ("Crew · reviewer", `wording.crew_title`), not the role its calls are made as
(the reviewer's is THOUGHT, which read as "Thought"); a reply a Stop left unmarked is the
member handed over to; and a role picked after the crew speaks as itself again."""

from __future__ import annotations

from typing import Any

from backends.streamlit.view import entries_of
from gui_agent.agents.crew import CREW_SPEAKER
from gui_agent.wording import crew_title
from schema import AgentName, Message, MessageStatus, Role

DOER, REVIEWER = AgentName.AGENT_EXECUTOR, AgentName.THOUGHT


def asked(text: str, switched: dict[str, str] | None = None) -> Message:
    metadata: dict[str, Any] = {} if switched is None else {"switched": switched}
    return Message(role=Role.USER, content=text, metadata=metadata)


def handover(member: str = "reviewer", agent: AgentName = REVIEWER) -> Message:
    metadata = {"crew_member": member, "crew_agent": agent.value}
    return Message(role=Role.USER, content=f"over to you, {member}", metadata=metadata)


def reply(
    text: str, agent: AgentName, member: str | None = None, *, stopped: bool = False
) -> Message:
    return Message(
        role=Role.ASSISTANT,
        content=text,
        agent=agent,
        metadata={} if member is None else {CREW_SPEAKER: member},
        status=MessageStatus.INTERRUPTED if stopped else MessageStatus.COMPLETE,
    )


def crew_turn(n: int) -> list[Message]:
    return [
        asked(f"task {n}"),
        reply(f"done {n}", DOER, "doer"),
        handover(),
        reply(f"checked {n}", REVIEWER, "reviewer"),
    ]


def speakers(history: list[Message]) -> list[str]:
    return [entry.speaker for entry in entries_of(history)]


def switch(from_agent: AgentName, to_agent: AgentName) -> dict[str, str]:
    return {"from_agent": from_agent.value, "to_agent": to_agent.value, "reason": "picked"}


def test_a_crews_replies_are_its_members() -> None:
    assert speakers(crew_turn(1)) == [
        "",
        crew_title("doer"),
        "Crew, over to the reviewer",
        crew_title("reviewer"),  # (it read "Thought")
    ]
    assert crew_title("reviewer") == "Crew · reviewer"


def test_a_reply_a_stop_left_unmarked_is_the_member_handed_over_to() -> None:
    history = [
        *crew_turn(1),
        *crew_turn(2)[:3],
        reply("half a review", REVIEWER, stopped=True),
        asked("again"),
        reply("half a do", DOER, stopped=True),
    ]
    assert speakers(history)[-3:] == [
        "Crew · reviewer",  # after the hand-over to the reviewer
        "",
        "Crew · doer",  # the first to answer the person, as last time
    ]


def test_a_role_picked_after_the_crew_speaks_as_itself_again() -> None:
    history = [
        *crew_turn(1),
        asked("you alone", switch(AgentName.CREW, DOER)),
        reply("as the executor", DOER),
        reply("stopped executor", DOER, stopped=True),
        asked("the crew again", switch(DOER, AgentName.CREW)),
        reply("stopped doer", DOER, stopped=True),
    ]
    assert speakers(history)[4:] == ["", "Executor", "Executor", "", "Crew · doer"]


def test_a_chat_begun_as_the_crew_before_its_first_switch_is_the_crews() -> None:
    history = [
        asked("task"),
        reply("stopped before its mark", DOER, stopped=True),
        asked("think", switch(AgentName.CREW, REVIEWER)),
        reply("a thought", REVIEWER),
    ]
    assert speakers(history) == ["", "Crew", "", "Thought"]


def test_other_roles_replies_are_their_roles() -> None:
    history = [asked("task"), reply("done", DOER), reply("more", DOER, stopped=True)]
    assert speakers(history) == ["", "Executor", "Executor"]


def test_a_crew_chat_with_no_switch_is_the_crews_from_its_first_reply() -> None:
    stopped = reply("stopped before its mark", DOER, stopped=True)
    # its later turns show it is the crew's (a chat with no switch ran as one role)
    assert speakers([asked("task"), stopped, *crew_turn(2)])[:2] == ["", "Crew"]
