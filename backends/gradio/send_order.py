"""A tab's messages are handled in the order the person sent them.

Each send of a page goes as an HTTP request of its own, and on a slow link a later one can
come first (one opens a new connection, the next reuses an idle one). The page numbers its
sends (1, 2, … from each page load, `tabs.send_number_of`); a send waits here until the tab's
sends numbered before it have been handed on, for at most `WAIT_S` (one lost on the way is
not waited for longer).
"""

from __future__ import annotations

import asyncio

from backends.gradio.bounded import keep_latest
from backends.gradio.tabs import MAX_TABS

__all__ = ["WAIT_S", "SendOrder"]

WAIT_S = 3.0
"""How long a send waits for the tab's sends numbered before it."""


class SendOrder:
    """Per tab, the highest send number handed on, and the sends waiting for theirs."""

    def __init__(self, wait_s: float = WAIT_S) -> None:
        self.wait_s = wait_s
        self._handed: dict[str, int] = {}
        self._changed: dict[str, asyncio.Event] = {}

    async def in_turn(self, tab: str, number: int) -> None:
        """Until the tab's sends numbered before `number` are handed on (at once for an
        unnumbered send, or the tab's first), for at most `wait_s`."""
        if number <= 1:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        while self._handed.get(tab, 0) < number - 1:
            left = deadline - loop.time()
            if left <= 0:
                return
            changed = self._changed.get(tab)
            if changed is None:
                changed = self._changed[tab] = asyncio.Event()
                while len(self._changed) > MAX_TABS:
                    del self._changed[next(iter(self._changed))]
            try:
                await asyncio.wait_for(changed.wait(), left)
            except TimeoutError:
                return

    def handed(self, tab: str, number: int) -> None:
        """The tab's send `number` is handed on (to its chat, or refused): the next may go.
        (Said again, as each update of the send goes, it does nothing.)"""
        if number <= 0 or self._handed.get(tab, 0) >= number:
            return
        keep_latest(self._handed, tab, number, MAX_TABS)
        changed = self._changed.pop(tab, None)
        if changed is not None:
            changed.set()
