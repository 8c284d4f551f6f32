"""How many automatic turns an AutoChat run has run, as the page says it. Pure.

The session announces each automatic turn (`autochat_turn`) before its delay; a run that
ends during that delay (Stop, a message of the person's) never runs the last one.
`TurnTally` follows a session's events and says whether the announced turn is running, for
the status line while AutoChat runs. `autochat_stopped.turns` already counts only the turns
that ran; the status line and the chat's "AutoChat stopped" note both say it in the same
words (`turns_phrase`).
"""

from __future__ import annotations

from dataclasses import dataclass

from schema import AutoChatStopped, AutoChatTurn, Event, InterpreterState, StateChanged

__all__ = ["TurnTally", "turns_phrase"]


@dataclass(slots=True)
class TurnTally:
    """The current AutoChat run's latest announced turn, and whether it has started."""

    announced: AutoChatTurn | None = None
    """The run's latest automatic turn (None before the first one and after the stop)."""
    started: bool = False
    """The announced turn is running (the session went RUNNING after the announcement)."""

    def apply(self, event: Event) -> None:
        if isinstance(event, AutoChatTurn):
            self.announced, self.started = event, False
        elif isinstance(event, StateChanged) and event.to_state is InterpreterState.RUNNING:
            self.started = self.announced is not None
        elif isinstance(event, AutoChatStopped):
            self.stop(event)

    def stop(self, event: AutoChatStopped) -> int:
        """How many automatic turns the run that `event` ends has run (the session counts
        only turns that started); the tally then starts afresh for the next run."""
        self.announced, self.started = None, False
        return event.turns


def turns_phrase(count: int) -> str:
    """ "1 automatic turn", "0 automatic turns"."""
    return f"{count:,} automatic turn{'' if count == 1 else 's'}"
