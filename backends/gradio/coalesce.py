"""Delta coalescing: how many UI updates a stream of events turns into.

A reader does not need more than ~10 updates a second, and each update costs the browser
far more than the server (it applies the whole streamed view again). `Coalescer` collects
events and says when to flush them: at once for structural events (a state change, an
approval, a message or tool call that starts or ends, an error), otherwise no sooner than
`interval_s` after the previous flush. Consecutive text deltas of one message are merged
into one, so the renderer does one append per flush instead of one per token. Pure: the
clock is injected.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from schema import Event, TextDelta

__all__ = ["DEFAULT_INTERVAL_S", "STRUCTURAL", "Coalescer", "merge_deltas"]

DEFAULT_INTERVAL_S: Final = 0.1
"""At most ~10 updates a second while text streams. Measured with one tab streaming a reply
of 20 words a second in headless Chromium: the browser took 0.68 of a core at 0.04 s (25 a
second), 0.43 at 0.1 s, and 0.24 at 0.25 s, against 0.11 for an idle tab."""

STRUCTURAL: Final = frozenset(
    {
        "state_changed",
        "message_completed",
        "tool_call_started",
        "tool_call_finished",
        "approval_requested",
        "approval_resolved",
        "agent_switched",
        "error",
        "run_finished",
        "autochat_turn",
        "autochat_stopped",
    }
)
"""Event types that are shown at once; everything else waits for the next tick."""


def merge_deltas(events: list[Event]) -> list[Event]:
    """The events with each run of consecutive deltas (same message, same channel) joined."""
    merged: list[Event] = []
    run: list[TextDelta] = []

    def close_run() -> None:
        if len(run) == 1:
            merged.append(run[0])
        elif run:
            last = run[-1]
            text = "".join(delta.delta for delta in run)
            merged.append(last.model_copy(update={"delta": text}))
        run.clear()

    for event in events:
        if isinstance(event, TextDelta):
            if run and (run[0].message_id, run[0].channel) != (event.message_id, event.channel):
                close_run()
            run.append(event)
        else:
            close_run()
            merged.append(event)
    close_run()
    return merged


class Coalescer:
    """Decides when buffered events become one UI update.

    `offer(event)` buffers an event and returns True when it must be shown now. Otherwise
    `timeout()` says how long the caller may wait for more events before calling `take()`.
    """

    def __init__(
        self,
        interval_s: float = DEFAULT_INTERVAL_S,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._pending: list[Event] = []
        self._last_flush = float("-inf")
        self._urgent = False

    @property
    def pending(self) -> int:
        return len(self._pending)

    def offer(self, event: Event) -> bool:
        """Buffer `event`; True when the buffer should be flushed now."""
        self._pending.append(event)
        if event.type in STRUCTURAL:
            self._urgent = True
        return self.due()

    def due(self) -> bool:
        """True when there is something to show and it may be shown now."""
        if not self._pending:
            return False
        return self._urgent or self._clock() - self._last_flush >= self.interval_s

    def timeout(self) -> float | None:
        """Seconds until the buffer is due; None when it is empty (wait for events)."""
        if not self._pending:
            return None
        if self._urgent:
            return 0.0
        return max(0.0, self._last_flush + self.interval_s - self._clock())

    def take(self) -> list[Event]:
        """The buffered events (deltas merged), and start a new interval."""
        events = merge_deltas(self._pending)
        self._pending = []
        self._urgent = False
        self._last_flush = self._clock()
        return events
