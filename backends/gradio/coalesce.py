"""Delta coalescing: how many UI updates a stream of events turns into.

A reader does not need more than ~10 updates a second, and each update costs the browser
far more than the server (it applies the whole streamed view again). `Coalescer` collects
events and says when to flush them: at once for structural events (a state change, an
approval, a message or tool call that starts or ends, an error), otherwise no sooner than
`interval_s` after the previous flush. Consecutive text deltas of one message are merged
into one, so the renderer does one append per flush instead of one per token. Pure: the
clock is injected.

A long chat is paced more slowly (`Coalescer.pace`): Gradio's page does work for every
message of the chat on every update (it renders each message's Markdown again and copies
the whole value), so an update's cost grows with the chat. At ten updates a second a chat
of 400 messages kept a core of the browser busy, and on a busy machine the page fell
seconds behind the reply (tests/bench/bench_long_chat.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from schema import Event, TextDelta

__all__ = [
    "DEFAULT_INTERVAL_S",
    "ENTRIES_PER_INTERVAL",
    "MAX_INTERVAL_S",
    "STRUCTURAL",
    "Coalescer",
    "merge_deltas",
    "paced_interval",
]

DEFAULT_INTERVAL_S: Final = 0.1
"""At most ~10 updates a second while text streams. Measured with one tab streaming a reply
of 20 words a second in headless Chromium: the browser took 0.68 of a core at 0.04 s (25 a
second), 0.43 at 0.1 s, and 0.24 at 0.25 s, against 0.11 for an idle tab."""

ENTRIES_PER_INTERVAL: Final = 80
"""A chat of more messages than this is updated less often, in proportion: twice as many
messages, half as many updates a second (`paced_interval`)."""

MAX_INTERVAL_S: Final = 1.0
"""The slowest pace: a very long chat still shows its reply grow once a second."""


def paced_interval(base_s: float, entries: int) -> float:
    """The interval between two updates of a chat showing `entries` messages: `base_s` up
    to ENTRIES_PER_INTERVAL of them, longer in proportion beyond, at most MAX_INTERVAL_S
    (or `base_s`, if that is longer)."""
    scaled = base_s * entries / ENTRIES_PER_INTERVAL
    return max(base_s, min(scaled, MAX_INTERVAL_S))


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
        "model_retrying",
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
    `pace(entries)` slows the updates of a long chat: text waits `paced_interval`, and a
    structural event waits for what that adds to the base interval (nothing in a short
    chat), so a burst of tool calls cannot outrun the page either.
    """

    def __init__(
        self,
        interval_s: float = DEFAULT_INTERVAL_S,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_s = interval_s
        self.interval_s = interval_s
        self._clock = clock
        self._pending: list[Event] = []
        self._last_flush = float("-inf")
        self._urgent = False

    @property
    def pending(self) -> int:
        return len(self._pending)

    @property
    def gap_s(self) -> float:
        """The least time between two updates, for structural events too: what pacing
        adds to the base interval."""
        return self.interval_s - self.base_s

    def pace(self, entries: int) -> None:
        """Pace the updates for a chat showing `entries` messages (`paced_interval`)."""
        self.interval_s = paced_interval(self.base_s, entries)

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
        since = self._clock() - self._last_flush
        return since >= (self.gap_s if self._urgent else self.interval_s)

    def timeout(self) -> float | None:
        """Seconds until the buffer is due; None when it is empty (wait for events)."""
        if not self._pending:
            return None
        wait = self.gap_s if self._urgent else self.interval_s
        return max(0.0, self._last_flush + wait - self._clock())

    def take(self) -> list[Event]:
        """The buffered events (deltas merged), and start a new interval."""
        events = merge_deltas(self._pending)
        self._pending = []
        self._urgent = False
        self._last_flush = self._clock()
        return events
