"""CREW: a small team that works on the request in turn, each member with its own brief.

The default crew is a doer and a reviewer: the executor does the task with its tools, then
a reviewer (no tools) checks the work for mistakes and gaps and writes the final answer.
The first member answers the person's message itself; its brief goes with each of its model
calls as an instruction (not kept in the history). Members after the first get the work
handed over as a USER message marked ``crew_member`` (shown as "Crew, over to the
reviewer"), carrying the person's request; retry, edit and the AutoChat goal skip these
messages. Why a user turn and not a system note: the last message
before the reviewer's call is the doer's answer, and some APIs read a conversation that ends
with an assistant message as the start of that message, to be continued.

A member that hits a limit ends the crew's turn with that outcome, and so does a token
budget spent when the next member's turn comes (a member without tools never checks it). A
member that calls `task_complete` ends only its own part: the members after it still check
the work and write the final answer (the task stays marked complete, so AutoChat stops
after this turn).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from gui_agent.agents.base import AgentDeps, turn_request
from gui_agent.agents.executor import ExecutorAgent, Turn, budget_spent, model_step
from gui_agent.session import Session
from schema import (
    AgentName,
    Event,
    Message,
    MessageCompleted,
    MessageStarted,
    Role,
    RunFinished,
)
from schema.messages import CREW_SPEAKER

__all__ = ["CREW_SPEAKER", "DEFAULT_CREW", "CrewAgent", "CrewMember"]


@dataclass(frozen=True, slots=True)
class CrewMember:
    """One member: a name people see, the role its messages carry, its brief (where
    ``{request}`` stands for the person's request; no other text in it is special, so a
    brief may show JSON) and whether it may call tools."""

    name: str
    agent: AgentName
    brief: str
    tools: bool


DEFAULT_CREW: tuple[CrewMember, ...] = (
    CrewMember(
        name="doer",
        agent=AgentName.AGENT_EXECUTOR,
        brief="Do the task: {request}",
        tools=True,
    ),
    CrewMember(
        name="reviewer",
        agent=AgentName.THOUGHT,
        brief=(
            "You are the reviewer. The request was: {request}\n\nCheck the work above for "
            "mistakes and gaps, then write the final answer for the person: correct what "
            "was wrong, and say plainly if something could not be done."
        ),
        tools=False,
    ),
)


class CrewAgent:
    """Runs the members in order on the same conversation."""

    def __init__(
        self,
        *,
        name: AgentName = AgentName.CREW,
        members: Sequence[CrewMember] = DEFAULT_CREW,
    ) -> None:
        if not members:
            raise ValueError("a crew needs at least one member")
        self._name = name
        self.members = tuple(members)

    @property
    def name(self) -> AgentName:
        return self._name

    @property
    def description(self) -> str:
        names = " then ".join(member.name for member in self.members)
        return f"A small team working in turn: {names}."

    async def run(self, session: Session, deps: AgentDeps, prompt: Message) -> AsyncIterator[Event]:
        request = turn_request(session, prompt)
        turn = Turn()
        for index, member in enumerate(self.members):
            if index > 0 and (spent := budget_spent(session)) is not None:
                names = ", ".join(m.name for m in self.members[index:])
                detail = f"{spent.detail}; not run: {names}"
                yield spent.model_copy(update={"detail": detail})
                return
            if index > 0:
                handoff = Message(
                    role=Role.USER,
                    content=member.brief.replace("{request}", request),
                    metadata={"crew_member": member.name, "crew_agent": member.agent.value},
                )
                session.add(handoff)
                yield MessageCompleted(message=handoff)
            # The first member answers the person's own message; its brief comes with each
            # of its model calls (not kept in the history, so retry and edit are unchanged).
            brief = member.brief.replace("{request}", request) if index == 0 else None
            stopped = False
            async for event in self._member_turn(session, deps, member, turn, brief):
                stopped = stopped or isinstance(event, RunFinished)
                yield event
            if stopped:
                return

    async def _member_turn(
        self,
        session: Session,
        deps: AgentDeps,
        member: CrewMember,
        turn: Turn,
        brief: str | None,
    ) -> AsyncIterator[Event]:
        if member.tools:
            events = ExecutorAgent(name=member.agent).loop(
                session, deps, turn=turn, instruction=brief
            )
        else:
            events = model_step(
                session, deps, agent=member.agent, turn=turn, use_tools=False, instruction=brief
            )
        async for event in events:
            if isinstance(event, MessageStarted) and event.role is Role.ASSISTANT:
                # (kept with the reply if the turn ends before it completes)
                yield event.model_copy(update={"speaker": member.name})
            elif isinstance(event, MessageCompleted) and event.message.role is Role.ASSISTANT:
                yield _spoken_by(session, event, member.name)
            else:
                yield event


def _spoken_by(session: Session, event: MessageCompleted, name: str) -> MessageCompleted:
    """`event` with its reply marked as member `name`'s, in the history too (the reply was
    kept there as it was completed: the last message with its id is it)."""
    reply = event.message
    marked = reply.model_copy(update={"metadata": {**reply.metadata, CREW_SPEAKER: name}})
    history = session.history
    for index in range(len(history) - 1, -1, -1):
        if history[index].id == reply.id:
            history[index] = marked
            break
    return event.model_copy(update={"message": marked})
