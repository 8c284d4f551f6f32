"""The event stream: the one contract every front end consumes.

Each event carries `type` (the discriminator), `seq` (monotonic per session), `session_id`,
`run_id` (the turn it belongs to, empty outside a turn) and `at`. Architectures build events
with the envelope left at its defaults; the interpreter stamps `seq`, `session_id` and
`run_id` as it publishes them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from schema.enums import (
    AgentName,
    ApprovalDecision,
    AutoChatStopReason,
    InterpreterState,
    MessageType,
    Role,
    RunOutcome,
)
from schema.messages import Message, ToolCall, ToolResult, Usage, utcnow

PROTOCOL_VERSION = "1.0"
"""Bumped on any incompatible change to an event's fields."""


class BaseEvent(BaseModel):
    seq: int = 0
    session_id: str = ""
    run_id: str = ""
    at: datetime = Field(default_factory=utcnow)


class StateChanged(BaseEvent):
    type: Literal["state_changed"] = "state_changed"
    from_state: InterpreterState
    to_state: InterpreterState
    reason: str = ""


class MessageStarted(BaseEvent):
    type: Literal["message_started"] = "message_started"
    message_id: str
    role: Role = Role.ASSISTANT
    message_type: MessageType = MessageType.MESSAGE
    agent: AgentName | None = None
    language: str | None = None
    parent_id: str | None = None
    """Set on a worker's message: the supervisor's delegate call it is part of. Such
    messages are kept display-only (people see them, models do not)."""
    speaker: str | None = None
    """Set on a crew member's reply: the member's name. A reply the turn ends before it
    completes keeps it as a completed one does (`metadata["crew_speaker"]`)."""


class TextDelta(BaseEvent):
    type: Literal["text_delta"] = "text_delta"
    message_id: str
    delta: str
    channel: Literal["content", "reasoning"] = "content"


class ModelRetrying(BaseEvent):
    """The model call writing `message_id` failed before its first word and is made again
    after `wait_s` (a `ModelRetryNotice` of the provider's). Front ends show it with the
    reply being written until its text streams or the turn ends: without it a rate limit
    looks like a frozen reply for a minute. Nothing failed yet (no error, no change of
    state); a newer notice of the same reply replaces it."""

    type: Literal["model_retrying"] = "model_retrying"
    message_id: str
    agent: AgentName | None = None
    attempt: int
    """The attempt about to be made, 1-based."""
    max_attempts: int
    wait_s: float
    reason: str
    """Why, in plain words: "rate limited (HTTP 429)", "server error (HTTP 503)"."""


class MessageCompleted(BaseEvent):
    type: Literal["message_completed"] = "message_completed"
    message: Message


class ToolCallStarted(BaseEvent):
    type: Literal["tool_call_started"] = "tool_call_started"
    call: ToolCall
    parent_message_id: str | None = None
    agent: AgentName | None = None


class ToolCallOutput(BaseEvent):
    """What a running tool has printed since its last `tool_call_output` (run_python's
    stdout and stderr as they come), for the people watching it run. Front ends show it
    with the call until its `tool_call_finished`, whose result holds the output the model
    reads; it is not kept in the history. A call's output comes a few times a second at
    most, each event at most a few kB: `omitted` counts the characters printed meanwhile
    that were left out (too much, too fast) before `text`."""

    type: Literal["tool_call_output"] = "tool_call_output"
    call_id: str
    text: str
    omitted: int = 0


class ToolCallFinished(BaseEvent):
    type: Literal["tool_call_finished"] = "tool_call_finished"
    result: ToolResult
    parent_message_id: str | None = None


class ApprovalRequested(BaseEvent):
    type: Literal["approval_requested"] = "approval_requested"
    approval_id: str
    call: ToolCall
    summary: str = ""
    detail: str = ""
    language: str | None = None
    destructive: bool = True


class ApprovalResolved(BaseEvent):
    type: Literal["approval_resolved"] = "approval_resolved"
    approval_id: str
    decision: ApprovalDecision
    note: str | None = None
    by: Literal["user", "policy", "timeout"] = "user"


class AgentSwitched(BaseEvent):
    type: Literal["agent_switched"] = "agent_switched"
    from_agent: AgentName | None
    to_agent: AgentName
    reason: str = ""


class UsageReported(BaseEvent):
    type: Literal["usage"] = "usage"
    turn: Usage
    total: Usage


class ErrorEvent(BaseEvent):
    type: Literal["error"] = "error"
    code: str
    message: str
    recoverable: bool = True


class RunFinished(BaseEvent):
    type: Literal["run_finished"] = "run_finished"
    outcome: RunOutcome
    detail: str = ""


class AutoChatTurn(BaseEvent):
    type: Literal["autochat_turn"] = "autochat_turn"
    turn: int
    max_turns: int
    remaining: int


class AutoChatStopped(BaseEvent):
    type: Literal["autochat_stopped"] = "autochat_stopped"
    reason: AutoChatStopReason
    turns: int = 0
    """Automatic turns that ran. A turn announced (`autochat_turn`) whose delay was cut short
    by the stop never ran and is not counted."""
    detail: str = ""


class MemoryUpdated(BaseEvent):
    type: Literal["memory_updated"] = "memory_updated"
    message_ids: tuple[str, ...]
    token_count: int
    token_estimated: bool = False
    goal: str | None = None
    goal_pinned: bool = False
    dropped: int = 0


class SessionUpdated(BaseEvent):
    """Title, settings, role or AutoChat settings changed."""

    type: Literal["session_updated"] = "session_updated"
    fields: dict[str, Any] = Field(default_factory=dict)


Event = Annotated[
    StateChanged
    | MessageStarted
    | TextDelta
    | ModelRetrying
    | MessageCompleted
    | ToolCallStarted
    | ToolCallOutput
    | ToolCallFinished
    | ApprovalRequested
    | ApprovalResolved
    | AgentSwitched
    | UsageReported
    | ErrorEvent
    | RunFinished
    | AutoChatTurn
    | AutoChatStopped
    | MemoryUpdated
    | SessionUpdated,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
"""Validates any event from a dict or JSON text (`EVENT_ADAPTER.validate_json(text)`)."""
