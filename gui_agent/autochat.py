"""AutoChat policy: whether to start another turn by itself, and why it stops.

Pure decisions over the session's AutoChat settings and the run's counters; the interpreter
acts on them. AutoChat runs only from STOP, after a turn has ended.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gui_agent.session import Session, written_by_person
from gui_agent.wording import SWITCHED_OFF, TURN_FAILED
from schema import (
    DEFAULT_CONTINUATION_PROMPT,
    AutoChatStopReason,
    Message,
    Role,
    RunOutcome,
)


@dataclass(slots=True)
class AutoRun:
    """Counters of one AutoChat run: from the person's message to the stop."""

    clock: Callable[[], float] = time.monotonic
    active: bool = False
    turns: int = 0
    """Automatic turns announced (`autochat_turn`), the one waiting out its delay included."""
    waiting: bool = False
    """The last announced turn has not started yet (its delay is running)."""
    started_at: float = 0.0
    start_tokens: int = 0
    goal: str | None = None
    stopped_reason: AutoChatStopReason | None = field(default=None)

    def begin(self, session: Session, goal: str | None) -> None:
        self.active = True
        self.turns = 0
        self.waiting = False
        self.started_at = self.clock()
        self.start_tokens = session.usage.total_tokens
        self.goal = goal
        self.stopped_reason = None
        session.goal = goal
        budget = session.autochat.token_budget
        session.token_limit = self.start_tokens + budget if budget else None

    def announce(self) -> None:
        """Another automatic turn is coming (after the delay)."""
        self.turns += 1
        self.waiting = True

    @property
    def turns_run(self) -> int:
        """Automatic turns that started: a run stopped during a delay never ran the turn it
        had announced."""
        return self.turns - self.waiting

    def end(self, session: Session, reason: AutoChatStopReason) -> None:
        self.active = False
        self.stopped_reason = reason
        session.token_limit = None

    def tokens_used(self, session: Session) -> int:
        return session.usage.total_tokens - self.start_tokens

    def stop_reason(
        self, session: Session, outcome: RunOutcome
    ) -> tuple[AutoChatStopReason, str] | None:
        """Why AutoChat must not start another turn now, or None to go on."""
        settings = session.autochat
        if not settings.enabled:
            return AutoChatStopReason.DISABLED, SWITCHED_OFF
        if outcome is RunOutcome.ERROR:
            return AutoChatStopReason.ERROR, TURN_FAILED
        if outcome is RunOutcome.INTERRUPTED:
            return AutoChatStopReason.STOPPED, "stopped by the user"
        if session.task_complete is not None:
            return AutoChatStopReason.TASK_COMPLETE, session.task_complete
        if outcome is RunOutcome.BUDGET or (
            settings.token_budget is not None and self.tokens_used(session) >= settings.token_budget
        ):
            used, budget = self.tokens_used(session), settings.token_budget
            return (  # (figures as `/auto` and the pages show them: 11,025 of 8,000)
                AutoChatStopReason.TOKEN_BUDGET,
                f"used {used:,} of {budget:,} tokens" if budget else f"used {used:,} tokens",
            )
        elapsed = self.clock() - self.started_at
        budget_s = settings.time_budget_s
        if budget_s is not None and elapsed >= budget_s:
            return AutoChatStopReason.TIME_BUDGET, f"ran {elapsed:.1f}s of {budget_s:.1f}s"
        if budget_s is not None and elapsed + settings.delay_s >= budget_s:
            # The next turn would start only after its delay, past the budget: none starts.
            return (
                AutoChatStopReason.TIME_BUDGET,
                f"ran {elapsed:.1f}s of {budget_s:.1f}s; the next turn would start after "
                f"its {settings.delay_s:g}s delay, past the budget",
            )
        if self.turns >= settings.max_turns:
            turns = settings.max_turns
            return (
                AutoChatStopReason.MAX_TURNS,
                f"reached {turns} automatic turn{'' if turns == 1 else 's'}",
            )
        return None

    def continuation(self, session: Session) -> Message:
        """The next automatic turn's prompt, as the settings say it now (edits made during
        the run count). A blank prompt would give the model nothing to act on (some vendors
        drop an empty message, leaving a conversation that ends with the agent's own
        reply), so the default one is sent instead."""
        prompt = session.autochat.continuation_prompt
        return Message(
            role=Role.USER,
            content=prompt if prompt.strip() else DEFAULT_CONTINUATION_PROMPT,
            metadata={"autochat": True, "autochat_turn": self.turns},
        )


def goal_to_pin(session: Session) -> str | Message | None:
    """What the memory keeps in view as the AutoChat goal: its text; or, when the person's
    message that set it carries images, that message (pinned with its images, so a goal
    shown rather than written is not lost once it slides out of the window). None when
    AutoChat is off or there is no goal."""
    goal = session.goal
    if goal is None or not session.autochat.enabled:
        return None
    text = goal.strip()
    for message in reversed(session.history):
        if written_by_person(message) and message.content.strip() == text:
            return message if message.images else goal
    return goal
