"""A session: one conversation, its settings and its history. Belongs to one interpreter."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from gui_agent.exceptions import ConfigError
from schema import (
    AgentName,
    AutoChatSettings,
    InterpreterState,
    Message,
    MessageStatus,
    MessageType,
    Role,
    SessionRecord,
    SessionSettings,
    ToolCall,
    Usage,
    UsageReported,
    new_id,
)
from schema.messages import UNANSWERED, utcnow
from schema.requests import plain_title

TITLE_CHARS = 60


@dataclass(eq=False)
class Session:
    """Mutable per-session data. Only the session's interpreter (and its agents) change it."""

    id: str = field(default_factory=new_id)
    owner: str = "local"
    title: str = ""
    agent: AgentName = AgentName.AGENT_EXECUTOR
    settings: SessionSettings = field(default_factory=SessionSettings)
    autochat: AutoChatSettings = field(default_factory=AutoChatSettings)
    history: list[Message] = field(default_factory=list)
    workdir: Path | None = None
    usage: Usage = field(default_factory=Usage)
    goal: str | None = None
    allowed_tools: set[str] = field(default_factory=set)
    inbox: deque[Message] = field(default_factory=deque)
    turn_agent: AgentName | None = None
    """The role the running (or last) turn began as. Once the person picks another, that
    turn takes no more of their queued messages: they go to the new role's turn, next."""
    task_complete: str | None = None
    token_limit: int | None = None
    denials: dict[str, str] = field(default_factory=dict)
    """What the model is told instead of a result, for each call the person refused."""
    allow_notes: dict[str, str] = field(default_factory=dict)
    """The note a person gave with "allow", for each such call: said after its result."""
    run_id: str = ""
    created_at: datetime = field(default_factory=utcnow)
    stopped_output: dict[str, str] | None = None
    """What the calls a Stop ended had made by then (`ToolContext.partial`), by call id: the
    turn's end says it in their answers."""
    unreported_usage: UsageReported | None = None
    """The usage of a model call cut short (Stop, an error mid-stream), counted into `usage`
    by the agent but not yet announced: the interpreter says it as the turn ends."""

    def workdir_path(self) -> Path:
        """The folder this session's tools may touch. Set by the interpreter."""
        if self.workdir is None:
            raise ConfigError("this session has no working folder")
        return self.workdir

    def add(self, message: Message) -> None:
        """Append a message; the person's first message with text names the session if it
        has no title (an AutoChat prompt or a hand-over between agents never does: after a
        message of images only, the chat list would show a reviewer's brief)."""
        self.history.append(message)
        if not self.title and message.content.strip() and written_by_person(message):
            self.title = title_from(message.content)

    def last_user_index(self) -> int | None:
        """Where the person's latest message is (AutoChat's prompts and plan steps skipped)."""
        for index in range(len(self.history) - 1, -1, -1):
            if written_by_person(self.history[index]):
                return index
        return None

    def to_record(self, state: InterpreterState) -> SessionRecord:
        return SessionRecord(
            id=self.id,
            owner=self.owner,
            title=self.title,
            agent=self.agent,
            settings=self.settings,
            autochat=self.autochat,
            state=state,
            usage=self.usage,
            goal=self.goal,
            created_at=self.created_at,
            updated_at=utcnow(),
        )

    @classmethod
    def from_record(cls, record: SessionRecord, history: list[Message]) -> Session:
        return cls(
            id=record.id,
            owner=record.owner,
            title=plain_title(record.title),  # (one saved before titles were kept plain)
            agent=record.agent,
            settings=record.settings,
            autochat=record.autochat,
            history=history,
            usage=record.usage,
            goal=record.goal,
            created_at=record.created_at,
        )


HANDOVER_MARKS = ("plan_step", "crew_member", "delegated_by")
"""Metadata keys of messages an agent writes to another agent (a plan step, a crew
hand-over, a supervisor's task and the worker's steps)."""


def is_handover(message: Message) -> bool:
    return any(message.metadata.get(mark) for mark in HANDOVER_MARKS)


def written_by_person(message: Message) -> bool:
    """A USER message the person wrote: not AutoChat's continuation, not a hand-over."""
    return (
        message.role is Role.USER
        and not message.metadata.get("autochat")
        and not is_handover(message)
    )


def title_from(text: str) -> str:
    """A one-line title from the start of a message (`plain_title`, then shortened)."""
    line = plain_title(text)
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def unanswered_calls(history: Sequence[Message]) -> tuple[Message, list[ToolCall]] | None:
    """The newest assistant message with tool calls that have no result yet, and those
    calls; None when there are none. Only the newest assistant message can have them (every
    turn answers its calls as it ends); one followed by the person's message was answered
    or never will be, so it is not looked at. Display-only messages are passed over."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.display_only:  # shown to people only: confirmations, a worker's steps
            continue
        if message.role is Role.USER:
            return None
        if message.role is not Role.ASSISTANT:
            continue
        if not message.tool_calls:
            return None
        answered = {m.tool_call_id for m in history[index + 1 :] if m.role is Role.TOOL}
        calls = [call for call in message.tool_calls if call.id not in answered]
        return (message, calls) if calls else None
    return None


def unanswered_call_result(
    call: ToolCall,
    content: str,
    *,
    agent: AgentName | None,
    was_running: bool,
    created_at: datetime | None = None,
    duration_ms: float | None = None,
) -> Message:
    """The error TOOL message that answers `call` when it got no result of its own (a turn
    that ended under it, an import that held none): marked interrupted and `is_error`, with
    its arguments, whether it may have run (`was_running`) and for how long (`duration_ms`,
    when known)."""
    metadata: dict[str, object] = {
        "is_error": True,
        "arguments": call.arguments,
        "was_running": was_running,
    }
    if duration_ms is not None:
        metadata["duration_ms"] = duration_ms
    return Message(
        role=Role.TOOL,
        type=MessageType.FUNCTION,
        content=content,
        tool_call_id=call.id,
        name=call.name,
        agent=agent,
        created_at=created_at or utcnow(),
        status=MessageStatus.INTERRUPTED,
        metadata=metadata,
    )


def marked_unanswered(message: Message) -> Message:
    """The person's `message` marked as left unanswered (`UNANSWERED`): the turn it waited
    for ended (a Stop, a server that stopped) before the agent read it. It stays in the
    history, display-only, and front ends say it can be sent again."""
    return message.model_copy(update={"metadata": {**message.metadata, UNANSWERED: True}})
