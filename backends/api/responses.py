"""The success bodies of the API: one pydantic model per answer.

Endpoints build these and send them as they are (`send`), so the shape a client reads is
the one the OpenAPI document describes (each route names its model through `success`),
and a field added to an answer without its model fails the type checker. Nested values are
the `schema` models the rest of GuiAgent uses: a `SessionRecord`, `Message`s, the open
`ApprovalRequested` events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from schema import (
    AgentName,
    ApprovalDecision,
    ApprovalRequested,
    Event,
    InterpreterState,
    Message,
    PermissionMode,
    SessionRecord,
    StreamingReply,
    ToolCallOutput,
)

if TYPE_CHECKING:
    from fastapi import Response

    from gui_agent.tools.permissions import ToolStanding

AuthMode = Literal["password", "proxy", "none"]


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True)


class LoginAnswer(_Answer):
    """A bearer token for `Authorization: Bearer <token>` and whom it names."""

    token: str
    token_type: Literal["bearer"] = "bearer"
    expires_at: str
    """ISO 8601, UTC."""
    user: str
    notice: str | None = None
    """Said when the login was sent a user name or password that it did not check: the
    server has no login (the token is for "local"), or its proxy names the user."""


class HealthAnswer(_Answer):
    status: Literal["ok"] = "ok"
    protocol_version: str
    auth: AuthMode
    """How to log in: with a password, through the proxy, or not at all ("none")."""


class ModelEntry(_Answer):
    name: str
    default: bool


class ModelsAnswer(_Answer):
    default: str | None
    models: list[ModelEntry]
    notice: str | None
    """What the page says up front (e.g. that the default is the tiny offline model)."""
    left_out: list[str] = []
    """Why models the server's environment configures are not offered (a base URL that can
    never work, ...), one reason each; empty when none was left out."""


class AgentEntry(_Answer):
    name: AgentName
    description: str


class AgentsAnswer(_Answer):
    default: AgentName | None
    agents: list[AgentEntry]


class SessionList(_Answer):
    sessions: list[SessionRecord]
    limit: int
    offset: int


class SessionAnswer(_Answer):
    """A session created or changed."""

    session: SessionRecord


class ImportAnswer(_Answer):
    session: SessionRecord
    message_count: int
    reset: list[str]
    """What the document held that the new session does not (e.g. `settings.permissions`)."""
    repairs: dict[str, int]
    """How many of each change made so any model can continue the history."""
    summary: str
    """What the import did, in plain words, as the chat page says it: the messages it
    brought, what it did not carry over, what it repaired (`gui_agent.import_words`)."""


class ReplayAnswer(_Answer):
    """An export's events in the order they happened, to show the chat step by step. Nothing
    is saved: a replay is not a session."""

    title: str
    """The exported chat's title ("" when it had none)."""
    message_count: int
    events: list[Event]
    """The recorded events when the export has them; else, per message, `message_started`,
    its text (reasoning first) as `text_delta`, then `message_completed`, numbered from 1."""


class SessionDetail(_Answer):
    session: SessionRecord
    messages: list[Message]
    """The last `limit` messages (all without `limit`)."""
    message_count: int
    state: InterpreterState
    busy: bool
    autochat_active: bool = False
    """An AutoChat run is going on: from the person's message (with AutoChat on) until its
    `autochat_stopped`. With `state` STOP it waits between two turns: another is coming
    (the badge says so, not "your turn"), and Stop ends it. Events keep it current from
    there: `autochat_turn` (on), `autochat_stopped` (off), and a `state_changed` to RUNNING
    while the session's `autochat.enabled` (on)."""
    pending_approvals: list[ApprovalRequested]
    streaming: list[StreamingReply]
    """Replies being written right now, not yet in `messages`: each with its text up to
    `last_seq` (status `interrupted`, as it would be kept if the turn stopped now), and in
    `retrying` the model's latest `model_retrying` while the reply has not begun (its
    `wait_s` the wait left; null otherwise). Events after `last_seq` continue them; their
    `message_completed` carries them whole."""
    running_calls: list[ToolCallOutput] = []
    """Tool calls running now (started, not finished), oldest first, each as one
    `tool_call_output` holding what it has printed up to `last_seq`: its latest 8,000
    characters, `omitted` counting those before (empty text: nothing printed yet). Events
    after `last_seq` continue them; a call's `tool_call_finished` ends it. Without it a
    client opened mid-call showed only what the call printed after it came."""
    last_seq: int
    epoch: str
    """Names this run of `seq` numbers; pass it back with `since` to resume the events."""
    protocol_version: str
    queued: list[Message] = []
    """Messages sent while a turn ran, waiting for the agent to read them, oldest first:
    each comes as `message_completed` when the agent takes it (or the turn is stopped).
    Without them a client opened meanwhile (a reload, another tab) did not show them, and
    the person sent them again."""
    allowed_tools: list[str] = []
    """The tools the person allowed for this session ("allow_session"): they run without
    asking until forgotten (`DELETE .../allowed-tools`), the server restarts or the session
    is unloaded. `session_updated` events with this field say when it changes."""


class AllowedToolsAnswer(_Answer):
    """The tools still allowed for the session without asking, after a forget."""

    allowed_tools: list[str]


class ToolInfo(_Answer):
    """One tool of a chat, and what a call of it does now (a `ToolStanding`'s fields)."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    name: str
    description: str
    destructive: bool
    """It changes things (runs code, writes files): unless a mode says otherwise, it asks."""
    mode: PermissionMode
    """What its next call does: allow (runs), ask (waits for the person), deny (refused)."""
    chosen: PermissionMode | None
    """The mode set for this chat (`PUT .../tools/{tool}`); null: the app's own."""
    allowed_for_session: bool
    """The person answered an approval with "allow for this session"."""

    @classmethod
    def of(cls, standing: ToolStanding) -> ToolInfo:
        return cls.model_validate(standing)


class ToolsAnswer(_Answer):
    """A chat's tools, in the order the model is shown them."""

    tools: list[ToolInfo]


class MemoryAnswer(_Answer):
    """What the next model call would be sent of the history: the memory window."""

    message_ids: list[str]
    """The history messages in the window, oldest first (`GET /api/sessions/{id}` has them)."""
    token_count: int
    """Tokens of the whole window (system prompt and pinned goal included)."""
    token_estimated: bool
    """True when counted by estimate (no tokenizer for the model)."""
    goal: str | None
    """AutoChat's goal, when it is on."""
    goal_pinned: bool
    """The goal had slid out of the window and is put back in."""
    dropped: int
    """Older messages that slid out of the window."""


class MessageAccepted(_Answer):
    message_id: str
    queued: bool
    """True when the message waits behind a running turn (or a retry or edit being made);
    False when it started a turn."""


class StopAnswer(_Answer):
    stopped: bool
    """False when nothing was running."""


class ApprovalAnswer(_Answer):
    approval_id: str
    decision: ApprovalDecision


class Cleared(_Answer):
    action: Literal["clear"] = "clear"


class TurnStarted(_Answer):
    action: Literal["retry", "edit_last"]
    message_id: str


def send(answer: BaseModel, status: int = 200) -> Response:
    """`answer` as the JSON body of a response."""
    # Imported here, not above: the API clients read these models without loading FastAPI.
    from fastapi import Response

    from backends.api.openapi import JSON

    return Response(answer.model_dump_json(), status_code=status, media_type=JSON)


def success(
    model: type[BaseModel], description: str, status: int = 200
) -> dict[int | str, dict[str, Any]]:
    """The `responses` entry of a route that answers `status` with a `model` body."""
    return {status: {"description": description, "model": model}}
