"""Messages the server refused after the browser had emptied the input box.

The browser empties the box (and unticks "edit my last message") as a send goes out, before
the server has looked at it. When the server then refuses it (an edit while a turn runs, an
edit in a chat with nothing to edit, a message the session will not take), what was typed
must not be lost: the send keeps it here, per tab, and the event that follows every send
(`Handlers.give_back`) puts it back in the box, with the tick and the images.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from schema import ImagePart

__all__ = ["Draft", "Unsent"]


@dataclass(frozen=True, slots=True)
class Draft:
    """A refused message, as the person had written it."""

    text: str
    as_edit: bool
    images: tuple[ImagePart, ...] = ()


class Unsent:
    """The last refused message of each tab, until it is given back.

    Bounded: past `max_tabs`, the drafts kept longest are dropped (a tab closed right after
    a refusal leaves its draft behind until then). For one event loop: not thread-safe.
    """

    def __init__(self, *, max_tabs: int = 256) -> None:
        self.max_tabs = max_tabs
        self._drafts: OrderedDict[str, Draft] = OrderedDict()

    def keep(self, tab: str, text: str, *, as_edit: bool, images: Sequence[ImagePart]) -> None:
        self._drafts.pop(tab, None)
        self._drafts[tab] = Draft(text, as_edit, tuple(images))
        while len(self._drafts) > self.max_tabs:
            self._drafts.popitem(last=False)

    def take(self, tab: str) -> Draft | None:
        """The tab's refused message, which is then no longer kept."""
        return self._drafts.pop(tab, None)
