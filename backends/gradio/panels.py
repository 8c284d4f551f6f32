"""Everything around the chat, as data and as Markdown: state badge, approval, AutoChat,
memory and usage panels. Pure: `PanelState.apply(event)` and plain render functions.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Protocol

from backends.gradio.markdown import escape_html
from schema import (
    AgentName,
    AgentSwitched,
    ApprovalRequested,
    ApprovalResolved,
    AutoChatStopped,
    AutoChatTurn,
    Event,
    InterpreterState,
    MemoryUpdated,
    SessionUpdated,
    StateChanged,
    Usage,
    UsageReported,
)

__all__ = [
    "MAX_TURNS_SHOWN",
    "MemoryInfo",
    "PanelState",
    "WindowLike",
    "autochat_idle_text",
    "badge_html",
    "code_language",
    "memory_markdown",
    "usage_markdown",
]

MAX_TURNS_SHOWN = 10
"""The usage panel lists this many recent turns."""

_STATE_HELP = {
    InterpreterState.INIT: "no turn yet",
    InterpreterState.RUNNING: "the agent is working",
    InterpreterState.WAITING: "waiting for your approval",
    InterpreterState.STOP: "idle; your turn",
}

_LANGUAGE_ALIASES = {"bash": "shell", "sh": "shell", "zsh": "shell", "js": "javascript"}


class WindowLike(Protocol):
    """What the memory panel reads from `Interpreter.window()` (a ContextWindow)."""

    @property
    def message_ids(self) -> tuple[str, ...]: ...
    @property
    def token_count(self) -> int: ...
    @property
    def token_estimated(self) -> bool: ...
    @property
    def goal(self) -> str | None: ...
    @property
    def goal_pinned(self) -> bool: ...
    @property
    def dropped(self) -> int: ...


@dataclass(frozen=True, slots=True)
class MemoryInfo:
    """Which messages the model sees next, and how many tokens that is."""

    message_ids: tuple[str, ...]
    token_count: int
    token_estimated: bool = False
    goal: str | None = None
    goal_pinned: bool = False
    dropped: int = 0

    @classmethod
    def of(cls, source: MemoryUpdated | WindowLike) -> MemoryInfo:
        return cls(
            message_ids=tuple(source.message_ids),
            token_count=source.token_count,
            token_estimated=source.token_estimated,
            goal=source.goal,
            goal_pinned=source.goal_pinned,
            dropped=source.dropped,
        )


@dataclass(slots=True)
class PanelState:
    """The side panels' data for one session, kept in step with its events."""

    state: InterpreterState = InterpreterState.INIT
    agent: AgentName = AgentName.AGENT_EXECUTOR
    title: str = ""
    approvals: OrderedDict[str, ApprovalRequested] = field(default_factory=OrderedDict)
    memory: MemoryInfo | None = None
    turns: OrderedDict[str, Usage] = field(default_factory=OrderedDict)
    total: Usage = field(default_factory=Usage)
    autochat: str = ""
    sessions_changed: bool = False
    """Set when the title changed (the session list needs a refresh); the reader resets it."""

    @property
    def approval(self) -> ApprovalRequested | None:
        """The approval request to show: the oldest one still open."""
        return next(iter(self.approvals.values()), None)

    def apply(self, event: Event) -> None:
        if isinstance(event, StateChanged):
            self.state = event.to_state
        elif isinstance(event, ApprovalRequested):
            self.approvals[event.approval_id] = event
        elif isinstance(event, ApprovalResolved):
            self.approvals.pop(event.approval_id, None)
        elif isinstance(event, AgentSwitched):
            self.agent = event.to_agent
        elif isinstance(event, MemoryUpdated):
            self.memory = MemoryInfo.of(event)
        elif isinstance(event, UsageReported):
            self.turns[event.run_id] = event.turn
            self.turns.move_to_end(event.run_id)
            while len(self.turns) > MAX_TURNS_SHOWN:
                self.turns.popitem(last=False)
            self.total = event.total
        elif isinstance(event, AutoChatTurn):
            self.autochat = (
                f"AutoChat running: automatic turn {event.turn} of {event.max_turns}, "
                f"{event.remaining} remaining."
            )
        elif isinstance(event, AutoChatStopped):
            detail = f" ({event.detail})" if event.detail else ""
            self.autochat = (
                f"AutoChat stopped after {event.turns} automatic turns: "
                f"{event.reason.value}{detail}."
            )
        elif isinstance(event, SessionUpdated):
            title = event.fields.get("title")
            if isinstance(title, str) and title != self.title:
                self.title = title
                self.sessions_changed = True
            agent = event.fields.get("agent")
            if isinstance(agent, str) and agent in AgentName.__members__:
                self.agent = AgentName(agent)


def badge_html(state: InterpreterState) -> str:
    """The state badge; its text is exactly the state's name."""
    return (
        f'<span class="ga-badge ga-badge-{state.value.lower()}" title="{_STATE_HELP[state]}">'
        f"{state.value}</span>"
    )


def autochat_idle_text(enabled: bool, active: bool, turns: int) -> str:
    """The AutoChat status when no AutoChat event has been seen yet."""
    if active:
        return f"AutoChat running: {turns} automatic turns so far."
    if enabled:
        return "AutoChat is on: after your next message the agent keeps going on its own."
    return "AutoChat is off."


def memory_markdown(
    memory: MemoryInfo | None, preview: Callable[[str], tuple[str, str] | None]
) -> str:
    """The memory panel: token count, goal pin, and the messages in the context window."""
    if memory is None:
        return "**Context window:** empty (no messages yet)."
    estimated = " (estimated)" if memory.token_estimated else ""
    lines = [
        f"**Context window:** {len(memory.message_ids)} messages, "
        f"{memory.token_count:,} tokens{estimated}."
    ]
    if memory.dropped:
        lines.append(f"{memory.dropped} older messages slid out of the window.")
    if memory.goal:
        pin = "pinned (re-inserted)" if memory.goal_pinned else "in the window"
        lines.append(f"**Goal** ({pin}): {escape_html(_short(memory.goal, 200))}")
    else:
        lines.append("**Goal:** none pinned.")
    if memory.message_ids:
        lines.append("")
        for number, message_id in enumerate(memory.message_ids, start=1):
            seen = preview(message_id)
            role, text = seen if seen is not None else ("?", message_id[:8])
            lines.append(f"{number}. *{role}*: {escape_html(text) or '…'}")
    return "\n".join(lines)


def usage_markdown(turns: OrderedDict[str, Usage], total: Usage) -> str:
    """Tokens in and out for recent turns and for the whole session."""
    estimated = " (estimated)" if total.estimated else ""
    lines = [
        f"**Session:** {total.input_tokens:,} in · {total.output_tokens:,} out · "
        f"{total.requests} model calls{estimated}"
    ]
    if turns:
        lines += ["", "| Turn | In | Out |", "|---:|---:|---:|"]
        first = max(1, len(turns) - MAX_TURNS_SHOWN + 1)
        for number, usage in enumerate(turns.values(), start=first):
            lines.append(f"| {number} | {usage.input_tokens:,} | {usage.output_tokens:,} |")
    return "\n".join(lines)


def code_language(language: str | None, supported: Collection[str | None]) -> str | None:
    """A language the code viewer knows, or None (plain text)."""
    if not language:
        return None
    name = _LANGUAGE_ALIASES.get(language.lower(), language.lower())
    return name if name in supported else None


def _short(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
