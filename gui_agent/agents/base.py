"""The Architecture protocol (an agent role) and what it is given to run a turn."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from gui_agent.approvals import ApprovalBroker
from gui_agent.hooks import AgentHooks, has_hooks
from gui_agent.llm import LLMProvider
from gui_agent.memory import SlidingWindowMemory
from gui_agent.session import Session
from gui_agent.tools import PermissionPolicy, ToolRegistry
from schema import AgentName, Event, Message


@dataclass(eq=False)
class AgentDeps:
    """Collaborators an architecture uses. Built by the interpreter for each session."""

    provider: LLMProvider
    tools: ToolRegistry
    permissions: PermissionPolicy
    memory: SlidingWindowMemory
    approvals: ApprovalBroker = field(default_factory=ApprovalBroker)
    hooks: AgentHooks = field(default_factory=AgentHooks)
    agents: Mapping[AgentName, Architecture] = field(default_factory=dict)
    tool_output: Callable[[str, str], None] | None = None
    """Where the tools of a call show what they print as they run (`ToolContext.show`)."""
    hooked: bool = field(init=False, default=False)
    """Whether `hooks` does anything; when not, the hook calls are skipped."""

    def __post_init__(self) -> None:
        self.hooked = has_hooks(self.hooks)


def turn_request(session: Session, prompt: Message) -> str:
    """The request a turn works on, in words for the messages one role hands another (a plan
    step, a crew member's brief): the person's message; for an AutoChat continuation, the
    goal it continues (the continuation prompt is an instruction to go on, not the request,
    and it asks for `task_complete`, which a member without tools cannot call). A request
    of images only reads "(the attached images)"."""
    text = prompt.content
    if prompt.metadata.get("autochat") and session.goal is not None:
        text = session.goal
    return text.strip() or "(the attached images)"


class Architecture(Protocol):
    """An agent role. `run` streams the events of one turn and appends to `session.history`.

    The interpreter frames the turn (state changes, run start and end, usage totals); the
    architecture yields what happens inside it. A `MessageCompleted` event is yielded for every
    message the architecture appends.
    """

    @property
    def name(self) -> AgentName: ...

    @property
    def description(self) -> str: ...

    def run(self, session: Session, deps: AgentDeps, prompt: Message) -> AsyncIterator[Event]: ...
