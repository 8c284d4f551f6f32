"""How a model call being asked again reads, the same in every front end.

`retry_words` turns a `model_retrying` event into the line shown with the reply being
written: "Rate limited (HTTP 429): asking again in 20 s (attempt 2 of 4)…". The React
client says it with `retryWords` in `backends/react/src/history.js`: keep the two alike.
"""

from __future__ import annotations

import math

from schema import ModelRetrying

__all__ = ["SAID_BY_NOTICE", "retry_words", "wait_words"]

SAID_BY_NOTICE = "said_by_retry_notice"
"""The attribute, set true, of a log record of a model call being asked again that a
`ModelRetryNotice` announces too (`connectors.resilience`). A front end that shows the
notice leaves such records out where it shows them (`gui_agent.repl_logging`), so a person
is told once; a log kept elsewhere (a server's) still has them."""


def wait_words(seconds: float) -> str:
    """A wait as the line says it: whole seconds rounded up ("1 s" for half a second, so
    it never reads as no wait), minutes from two minutes on."""
    if seconds >= 120:
        return f"{math.ceil(seconds / 60)} min"
    return f"{max(1, math.ceil(seconds))} s"


def retry_words(event: ModelRetrying) -> str:
    """The line that says why the reply has not begun and when the model is asked again.
    The attempt is named from the second on (a server still loading its model is asked
    again without counting an attempt: "attempt 1 of 4" would read as a first try)."""
    reason = event.reason[:1].upper() + event.reason[1:]
    when = f"in {wait_words(event.wait_s)}" if event.wait_s > 0 else "now"
    count = f" (attempt {event.attempt} of {event.max_attempts})" if event.attempt > 1 else ""
    return f"{reason}: asking again {when}{count}…"
