"""Running tools' output on its way to the people watching (`tool_call_output` events).

A tool shows what it prints as it prints it through `ToolContext.show`. Printing can be far
faster than anyone reads, or than a page redraws: here the text of each call is gathered and
published INTERVAL_S after its first unsent part, at most CHUNK_CHARS of it (the latest),
with the count of characters left out. A call's last part is published just before its
`tool_call_finished`; the text of a call that is no longer running is dropped.

What is published is text to read: terminal escape sequences (colours, titles) are taken
out, and one cut between two parts is held back until its rest has come.

What each running call has published so far is kept too (its latest SHOWN_CHARS), so a
reader that comes mid-call (a reload, another tab) is shown it at once (`printed`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

from gui_agent.terminal_text import split_escapes, without_escapes
from schema import Event, ToolCallOutput

__all__ = ["CHUNK_CHARS", "INTERVAL_S", "SHOWN_CHARS", "LiveOutput", "latest_output"]

INTERVAL_S: Final = 0.2
"""The most often one call's output is published: five times a second."""

CHUNK_CHARS: Final = 4000
"""The most text one `tool_call_output` carries; older text printed meanwhile is left out
(and counted). At five a second that is 20 kB/s, more than anyone reads."""


SHOWN_CHARS: Final = 8000
"""How much of a running call's output a front end keeps and shows: the latest characters."""


def latest_output(
    shown: str, left_out: int, text: str, omitted: int, keep: int = SHOWN_CHARS
) -> tuple[str, int]:
    """A front end's view of a running call's output after one `tool_call_output`: the
    latest `keep` characters, and how many came before them. The event's `omitted`
    characters were printed between what was shown and its `text`, so what was shown goes
    too: everything shown follows on without a gap, and all that is left out comes first."""
    if omitted:
        left_out += len(shown) + omitted
        shown = ""
    shown += text
    if len(shown) > keep:
        left_out += len(shown) - keep
        shown = shown[-keep:]
    return shown, left_out


class LiveOutput:
    """The unsent output of a session's running tool calls, published in parts."""

    __slots__ = ("_is_running", "_omitted", "_pending", "_publish", "_shown", "_timer")

    def __init__(self, publish: Callable[[Event], None], is_running: Callable[[str], bool]) -> None:
        """`publish`: sends an event to the session's readers. `is_running`: whether a call
        id is of a call that has started and not finished (text for any other is dropped)."""
        self._publish = publish
        self._is_running = is_running
        self._pending: dict[str, str] = {}
        self._omitted: dict[str, int] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._shown: dict[str, tuple[str, int, ToolCallOutput]] = {}
        """Per running call: the latest of what was published, what came before it, and
        the last event that published it."""

    def feed(self, call_id: str, text: str) -> None:
        """Add what call `call_id` printed; it is published within INTERVAL_S."""
        if not text or not self._is_running(call_id):
            return
        pending = self._pending.get(call_id, "") + text
        if len(pending) > CHUNK_CHARS:
            cut = len(pending) - CHUNK_CHARS
            self._omitted[call_id] = self._omitted.get(call_id, 0) + cut
            pending = pending[cut:]
        self._pending[call_id] = pending
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(INTERVAL_S, self.flush)

    def flush(self) -> None:
        """Publish every running call's unsent output now."""
        self._timer = None
        for call_id in list(self._pending):
            self._send(call_id, last=False)

    def finish(self, call_id: str) -> None:
        """Publish what call `call_id` printed and is not sent yet (it is about to finish)."""
        self._send(call_id, last=True)
        self._shown.pop(call_id, None)

    def printed(self, call_id: str) -> ToolCallOutput | None:
        """What running call `call_id` has published so far, as one event (the seq of the
        last that published it): its latest SHOWN_CHARS, `omitted` counting all before
        them. None before its first output."""
        shown = self._shown.get(call_id)
        if shown is None or not self._is_running(call_id):
            return None
        text, left_out, last = shown
        return last.model_copy(update={"text": text, "omitted": left_out})

    def _send(self, call_id: str, *, last: bool) -> None:
        text = self._pending.pop(call_id, None)
        omitted = self._omitted.pop(call_id, 0)
        if text is None or not self._is_running(call_id):
            return
        if last:
            text = without_escapes(text)
        else:
            text, held = split_escapes(text)
            if held:  # the rest of a sequence is still to come: it goes with it
                self._pending[call_id] = held
        if text or omitted:
            event = ToolCallOutput(call_id=call_id, text=text, omitted=omitted)
            self._publish(event)
            shown, left_out, _ = self._shown.get(call_id) or ("", 0, event)
            self._shown[call_id] = (*latest_output(shown, left_out, text, omitted), event)

    def close(self) -> None:
        """Drop everything unsent (the turn has ended)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending.clear()
        self._omitted.clear()
        self._shown.clear()
