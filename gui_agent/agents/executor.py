"""AGENT_EXECUTOR: the tool-calling loop.

Each iteration: window the history, stream one model call, then run the tools it asked for
(approvals first, then all allowed calls in parallel; results appended in call order). Ends on
a reply without tool calls, on `task_complete`, on max iterations, or on the token budget.

The steps live beside the loop: the model call in `gui_agent.agents.model_call`, the repairs
a reply gets before it is kept in `gui_agent.agents.replies`, the tool calls in
`gui_agent.agents.tool_step`. Their names stay importable from here.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence

from gui_agent.agents.base import AgentDeps
from gui_agent.agents.model_call import (
    Turn,
    budget_spent,
    charge_unfinished,
    memory_event,
    model_step,
    reply_metadata,
)
from gui_agent.agents.replies import distinct_calls, valid_response, without_calls
from gui_agent.agents.tool_step import (
    ask_person,
    completes,
    cut_off_call,
    denial_text,
    run_one,
    run_parallel,
    run_tool_calls,
    safe_args,
    session_denial,
    with_allow_note,
)
from gui_agent.session import Session
from gui_agent.wording import counted
from schema import (
    AgentName,
    Event,
    Message,
    MessageCompleted,
    Role,
    RunFinished,
    RunOutcome,
    ToolCall,
)

__all__ = [
    "ExecutorAgent",
    "Turn",
    "ask_person",
    "budget_spent",
    "charge_unfinished",
    "completes",
    "cut_off_call",
    "denial_text",
    "distinct_calls",
    "drain_inbox",
    "max_steps_note",
    "memory_event",
    "model_step",
    "reply_metadata",
    "run_one",
    "run_parallel",
    "safe_args",
    "session_denial",
    "valid_response",
    "with_allow_note",
    "without_calls",
]

logger = logging.getLogger(__name__)


def drain_inbox(session: Session) -> list[Message]:
    """Messages the person sent while the turn ran, moved into the history; none once they
    picked another role than the one the turn began as: those wait for that role's turn."""
    if session.agent is not session.turn_agent:
        return []
    moved = []
    while session.inbox:
        message = session.inbox.popleft()
        session.add(message)
        moved.append(message)
    return moved


def max_steps_note(agent: AgentName, steps: int) -> Message:
    """What a role that reached its step limit (`max_iterations`) without an answer says to
    the person, marked `truncated`: without it the turn ends with only an outcome, and the
    person is left with a chat that stops after a tool result."""
    return Message(
        role=Role.ASSISTANT,
        agent=agent,
        content=(
            f"I stopped after {counted(steps, 'step')} (the maximum for one turn) without a "
            "final answer. Say 'continue' to let me go on."
        ),
        metadata={"truncated": True},
    )


class ExecutorAgent:
    """The default role: a model that calls tools until it has an answer."""

    def __init__(self, *, name: AgentName = AgentName.AGENT_EXECUTOR) -> None:
        self._name = name

    @property
    def name(self) -> AgentName:
        return self._name

    @property
    def description(self) -> str:
        return "Calls tools (run code, read and write files) until the task is answered."

    def run(self, session: Session, deps: AgentDeps, prompt: Message) -> AsyncIterator[Event]:
        return self.loop(session, deps, turn=Turn())

    async def loop(
        self, session: Session, deps: AgentDeps, *, turn: Turn, instruction: str | None = None
    ) -> AsyncIterator[Event]:
        """Model calls and tool runs on the history as it stands, until an answer, a limit or
        `task_complete`. `turn` may carry model calls other roles made first in this turn;
        `instruction` goes to each of these model calls (see `model_step`).

        Only this loop's own `task_complete` ends it: a crew member with tools that comes
        after one that declared the task done still works until its own answer."""
        completed_before = session.task_complete is not None
        for _ in range(session.settings.max_iterations):
            for queued in drain_inbox(session):
                yield MessageCompleted(message=queued)
            async for event in model_step(
                session, deps, agent=self._name, turn=turn, instruction=instruction
            ):
                yield event
            response = turn.last_response()
            if not response.tool_calls:
                return
            calls = response.tool_calls
            cut_off = response.finish_reason == "length"
            async for event in self.run_tools(session, deps, calls, cut_off=cut_off):
                yield event
            if session.task_complete is not None and (
                not completed_before or completes(session, calls)
            ):
                return
            if (spent := budget_spent(session)) is not None:
                yield spent
                return
        steps = session.settings.max_iterations
        note = max_steps_note(self._name, steps)
        session.add(note)
        yield MessageCompleted(message=note)
        yield RunFinished(
            outcome=RunOutcome.MAX_ITERATIONS,
            detail=f"stopped after {counted(steps, 'model call')}",
        )

    def run_tools(
        self,
        session: Session,
        deps: AgentDeps,
        calls: Sequence[ToolCall],
        *,
        cut_off: bool = False,
    ) -> AsyncIterator[Event]:
        """This role's run of `calls` (see `run_tool_calls`): approvals in order, then the
        allowed calls in parallel, results appended in call order. It returns the step's
        event stream itself, adding no layer per event."""
        return run_tool_calls(session, deps, calls, agent=self._name, cut_off=cut_off)
