"""Enumerations shared by every layer: roles, message types, agent names, states."""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """Who wrote a message, in the sense every chat API uses."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class MessageType(StrEnum):
    """How a message is shown. Only these six exist; every front end renders each one."""

    MESSAGE = "message"
    CODE = "code"
    CONFIRMATION = "confirmation"
    CONSOLE = "console"
    IMAGE = "image"
    FUNCTION = "function"


class AgentName(StrEnum):
    """The role (architecture) of the agent that wrote a message."""

    AGENT_EXECUTOR = "AGENT_EXECUTOR"
    LLM_PLANNER = "LLM_PLANNER"
    SUPERVISOR = "SUPERVISOR"
    THOUGHT = "THOUGHT"
    CREW = "CREW"
    OTHER = "OTHER"


class InterpreterState(StrEnum):
    """States of the per-session interpreter. INIT is never re-entered."""

    INIT = "INIT"
    RUNNING = "RUNNING"
    WAITING = "WAITING"
    STOP = "STOP"


class MessageStatus(StrEnum):
    """Whether a message was written to its end."""

    COMPLETE = "complete"
    INTERRUPTED = "interrupted"
    ERROR = "error"


class ApprovalDecision(StrEnum):
    """A person's answer to an approval request."""

    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    DENY = "deny"


class PermissionMode(StrEnum):
    """Per-tool policy: run freely, never run, or ask the person first."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


class RunOutcome(StrEnum):
    """How a turn ended."""

    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    ERROR = "error"
    MAX_ITERATIONS = "max_iterations"
    BUDGET = "budget"


class AutoChatStopReason(StrEnum):
    """Why AutoChat stopped continuing on its own."""

    TASK_COMPLETE = "task_complete"
    MAX_TURNS = "max_turns"
    TOKEN_BUDGET = "token_budget"
    TIME_BUDGET = "time_budget"
    ERROR = "error"
    USER_MESSAGE = "user_message"
    STOPPED = "stopped"
    DISABLED = "disabled"
