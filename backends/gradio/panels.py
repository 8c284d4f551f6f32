"""Everything around the chat, as data and as Markdown: state badge, approval, AutoChat,
memory and usage panels. Pure: `PanelState.apply(event)` and plain render functions.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from backends.gradio.autoturns import TurnTally, turns_phrase
from backends.gradio.markdown import escape_html, escape_title
from gui_agent.tools.permissions import ToolStanding
from gui_agent.wording import (
    AUTOCHAT_STILL_ON,
    allowed_tools_words,
    autochat_stop_words,
    counted,
    tool_mode_words,
    with_full_stop,
)
from schema import (
    AgentName,
    AgentSwitched,
    ApprovalRequested,
    ApprovalResolved,
    AutoChatStopped,
    AutoChatStopReason,
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
    "BADGE_WORDS",
    "BETWEEN_TURNS",
    "MAX_TURNS_SHOWN",
    "AutoChatStatus",
    "MemoryInfo",
    "PanelState",
    "WindowLike",
    "allowed_markdown",
    "badge_html",
    "code_language",
    "memory_markdown",
    "tools_markdown",
    "usage_markdown",
]

MAX_TURNS_SHOWN = 10
"""The usage panel lists this many recent turns."""

"""Said after why AutoChat stopped while its switch stays on (a limit, Stop, a failure)."""

BADGE_WORDS: Mapping[InterpreterState, str] = MappingProxyType(
    {
        InterpreterState.INIT: "Ready",
        InterpreterState.RUNNING: "Working…",
        InterpreterState.WAITING: "Waiting for your approval",
        InterpreterState.STOP: "Your turn",
    }
)
"""What the state badge says in each state: plain words, not the state's name (STOP next to
the red Stop button read as a command; INIT is jargon). The name stays in `data-state` and
in the class `ga-badge-<state>` for code and styles."""

BETWEEN_TURNS = "AutoChat: next turn soon"
"""What the badge says while AutoChat waits between two turns (the state is STOP, yet a
turn is coming: "Your turn" then read as if nothing more would happen)."""
_BETWEEN_HELP = "AutoChat starts its next turn after its delay; Stop ends AutoChat"

_STATE_HELP = {
    InterpreterState.INIT: "no turn yet: send a message to start",
    InterpreterState.RUNNING: "the agent is working; Stop ends the turn",
    InterpreterState.WAITING: "a tool waits for your answer in the approval panel",
    InterpreterState.STOP: "the agent has finished; send your next message",
}

_ACTIVE = (InterpreterState.RUNNING, InterpreterState.WAITING)
_AUTOCHAT_EVENTS = (AutoChatTurn, AutoChatStopped, StateChanged, SessionUpdated)

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
class AutoChatStatus:
    """What the AutoChat panel says, kept in step with the session's events."""

    enabled: bool = False
    active: bool = False
    """An AutoChat run is going on (from the person's message until it stops)."""
    tally: TurnTally = field(default_factory=TurnTally)
    """The current run's latest automatic turn (announced before its delay), and whether it
    has started."""
    stopped: AutoChatStopped | None = None
    """Why the last run stopped, counting the turns that ran; said until AutoChat is
    switched or starts again."""
    max_turns: int | None = None
    """The limit as set since the latest turn was announced (edited while AutoChat runs)."""

    def apply(self, event: Event) -> None:
        if isinstance(event, AutoChatStopped):
            ran = self.tally.stop(event)
            self.active, self.stopped = False, event.model_copy(update={"turns": ran})
            return
        was_announced = self.tally.announced is not None
        self.tally.apply(event)
        if isinstance(event, AutoChatTurn):
            self.active, self.stopped, self.max_turns = True, None, None
        elif isinstance(event, StateChanged) and event.to_state is InterpreterState.RUNNING:
            if not was_announced and self.enabled:  # the person's message: AutoChat goes on
                self.active, self.stopped = True, None
        elif isinstance(event, SessionUpdated):
            settings = event.fields.get("autochat")
            enabled = settings.get("enabled") if isinstance(settings, dict) else None
            limit = settings.get("max_turns") if isinstance(settings, dict) else None
            if isinstance(limit, int):
                self.max_turns = limit
            if isinstance(enabled, bool) and enabled != self.enabled:
                # A run that is going on says itself when it stops (after its turn).
                self.enabled, self.stopped = enabled, None

    def replay(self, event: Event) -> None:
        """`apply` for a view built after the events (a reload, another tab): the chat's
        switch is known at a stop (a run goes on only while it is on, unless it was switched
        off), so a switch made after the stop ends its news as it does in a live view."""
        self.apply(event)
        if isinstance(event, AutoChatStopped):
            self.enabled = event.reason is not AutoChatStopReason.DISABLED

    def text(self) -> str:
        turn = self.tally.announced
        if self.active and turn is not None:
            limit = turn.max_turns if self.max_turns is None else self.max_turns
            if self.tally.started:
                return (
                    f"AutoChat running: automatic turn {turn.turn} of {limit}, "
                    f"{max(0, limit - turn.turn)} remaining."
                )
            return f"AutoChat: automatic turn {turn.turn} of {limit} starts shortly."
        if self.active:
            return "AutoChat is on: after this reply the agent keeps going on its own."
        if self.stopped is not None:
            stop = self.stopped
            # (the agent's words when it declared the task done, an error's message)
            words = escape_html(autochat_stop_words(stop.reason, stop.detail))
            said = with_full_stop(f"AutoChat stopped after {turns_phrase(stop.turns)}: {words}")
            return f"{said} {AUTOCHAT_STILL_ON}" if self.enabled else said
        if self.enabled:
            return "AutoChat is on: after your next message the agent keeps going on its own."
        return "AutoChat is off."


@dataclass(slots=True)
class PanelState:
    """The side panels' data for one session, kept in step with its events."""

    state: InterpreterState = InterpreterState.INIT
    agent: AgentName = AgentName.AGENT_EXECUTOR
    title: str = ""
    approvals: OrderedDict[str, ApprovalRequested] = field(default_factory=OrderedDict)
    memory: MemoryInfo | None = None
    turns: OrderedDict[str, Usage] = field(default_factory=OrderedDict)
    """The latest turns' usage (at most MAX_TURNS_SHOWN), oldest first."""
    turns_seen: int = 0
    """How many turns reported usage to this view: the number of the newest one."""
    total: Usage = field(default_factory=Usage)
    auto: AutoChatStatus = field(default_factory=AutoChatStatus)
    sessions_changed: bool = False
    """Set when the title changed (the session list needs a refresh); the reader resets it."""
    allowed: tuple[str, ...] = ()
    """The tools allowed for this session without asking ("Allow for this session")."""
    tools: Callable[[], tuple[ToolStanding, ...]] = tuple
    """How each of the chat's tools stands now (read when the view is drawn: the chat's
    settings and allowed tools decide it)."""

    @property
    def approval(self) -> ApprovalRequested | None:
        """The approval request to show: the oldest one still open."""
        return next(iter(self.approvals.values()), None)

    @property
    def autochat(self) -> str:
        """The AutoChat status line."""
        return self.auto.text()

    @property
    def stoppable(self) -> bool:
        """Stop has something to stop: a turn, or AutoChat (also between its turns)."""
        return self.state in _ACTIVE or self.auto.active

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
            if event.run_id not in self.turns:
                self.turns_seen += 1
            self.turns[event.run_id] = event.turn
            self.turns.move_to_end(event.run_id)
            while len(self.turns) > MAX_TURNS_SHOWN:
                self.turns.popitem(last=False)
            self.total = event.total
        elif isinstance(event, SessionUpdated):
            title = event.fields.get("title")
            if isinstance(title, str) and title != self.title:
                self.title = title
                self.sessions_changed = True
            agent = event.fields.get("agent")
            if isinstance(agent, str) and agent in AgentName.__members__:
                self.agent = AgentName(agent)
            allowed = event.fields.get("allowed_tools")
            if isinstance(allowed, list):
                self.allowed = tuple(str(name) for name in allowed)
        if isinstance(event, _AUTOCHAT_EVENTS):
            self.auto.apply(event)


def badge_html(state: InterpreterState, *, stoppable: bool | None = None) -> str:
    """The state badge: the state in plain words (`BADGE_WORDS`), its name in `data-state`.
    `data-stoppable` tells the page whether Stop has something to stop (by default: a turn
    is running or waiting); AutoChat between two turns is STOP, yet stoppable."""
    active = state in _ACTIVE if stoppable is None else stoppable
    between = state is InterpreterState.STOP and active  # AutoChat, before its next turn
    words, help_text = (BETWEEN_TURNS, _BETWEEN_HELP) if between else (BADGE_WORDS[state], None)
    return (
        f'<span class="ga-badge ga-badge-{state.value.lower()}" '
        f'title="{help_text or _STATE_HELP[state]}" '
        f'data-state="{state.value}" data-stoppable="{str(active).lower()}">'
        f"{words}</span>"
    )


def memory_markdown(
    memory: MemoryInfo | None, preview: Callable[[str], tuple[str, str] | None]
) -> str:
    """The memory panel: token count, goal pin, and the messages in the context window."""
    if memory is None:
        return "**Context window:** empty (no messages yet)."
    estimated = " (estimated)" if memory.token_estimated else ""
    lines = [
        f"**Context window:** {counted(len(memory.message_ids), 'message')}, "
        f"{counted(memory.token_count, 'token')}{estimated}."
    ]
    if memory.dropped:
        older = counted(memory.dropped, "older message")
        lines.append(f"{older} slid out of the window.")
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


def allowed_markdown(allowed: tuple[str, ...]) -> str:
    """The tools that run without asking in this chat, because the person allowed them for
    the session; the button under it makes them ask again."""
    return escape_title(allowed_tools_words(allowed))


def tools_markdown(tools: tuple[ToolStanding, ...]) -> str:
    """Each tool of the chat and what a call of it does, one line each."""
    if not tools:
        return "This chat has no tools."
    return "\n".join(
        f"- {escape_title(t.name)}: {tool_mode_words(t.mode, t.chosen, t.allowed_for_session)}"
        for t in tools
    )


def usage_markdown(
    turns: OrderedDict[str, Usage], total: Usage, *, newest: int | None = None
) -> str:
    """Tokens in and out for recent turns and for the whole session. `newest`: the number
    of the last turn in `turns` (PanelState.turns_seen; by default, as many as listed)."""
    estimated = " (estimated)" if total.estimated else ""
    lines = [
        f"**This chat:** {total.input_tokens:,} in · {total.output_tokens:,} out · "
        f"{counted(total.requests, 'model call')}{estimated}"
    ]
    if turns:
        lines += ["", "| Turn | In | Out |", "|---:|---:|---:|"]
        last = len(turns) if newest is None else max(newest, len(turns))
        first = last - len(turns) + 1
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
