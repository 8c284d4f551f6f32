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

from backends.gradio.bounded import keep_latest
from schema import ImagePart

__all__ = ["BegunEdits", "Draft", "Unsent"]


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


class BegunEdits:
    """Which message each tab's "Edit last message" put in its box, by chat: the edit sent
    from there names it, so that one sent since from another tab makes the server refuse
    the edit (it replaced that newer message and dropped its reply). Kept until an edit of
    it succeeds, or the tab sends a new message; bounded as `Unsent` is."""

    def __init__(self, *, max_tabs: int = 256) -> None:
        self.max_tabs = max_tabs
        self._begun: dict[str, tuple[str, str]] = {}

    def begin(self, tab: str, session_id: str, message_id: str) -> None:
        keep_latest(self._begun, tab, (session_id, message_id), self.max_tabs)

    def of(self, tab: str, session_id: str) -> str | None:
        """The message the tab began editing in that chat (None: none, or in another)."""
        begun = self._begun.get(tab)
        return begun[1] if begun is not None and begun[0] == session_id else None

    def end(self, tab: str) -> None:
        self._begun.pop(tab, None)
