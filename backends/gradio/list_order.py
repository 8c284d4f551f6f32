"""Which reading of a tab's chats list is the newest (`ListOrder`).

Several events show the chats list: a rename, a search, a chat opened, a follow of a change
made elsewhere (a first message titling the chat is one). Each reads the list from the
store, and Gradio runs a tab's different events at the same time. So a reading taken before
a rename can finish after the rename's own reading has been shown: shown last, it puts the
old title back, and it stays until the list changes again. Each reading takes a number as it
starts; one that finishes after a higher-numbered one was taken up leaves the list as it is
(what the tab shows then is newer than it).

A reading is filtered by the tab's search. The query an event carries is the one the search
box had when the event was triggered, and a reading that finishes after the search's own
can be one triggered before the person typed the query (a send's list refresh, when the
turn ended as New chat was clicked). Shown last, it listed every chat under a search box
that still showed the query. So each tab's query is the one its search box was last given,
by the search's own event or by an event that set the box, and every reading for the tab
is filtered by it (`query`).
"""

from __future__ import annotations

from backends.gradio.bounded import keep_latest
from backends.gradio.tabs import MAX_TABS

__all__ = ["ListOrder"]


class ListOrder:
    """The numbers of a server's chats-list readings, and the newest one each tab took up."""

    def __init__(self) -> None:
        self._taken = 0
        self._shown: dict[str, int] = {}  # tab -> the number of the newest list it got
        self._queries: dict[str, str] = {}  # tab -> what its search box was last given

    def begin(self) -> int:
        """A number for a reading about to start: higher than every one before it."""
        self._taken += 1
        return self._taken

    def take_up(self, tab: str, reading: int) -> bool:
        """Whether the tab is to show the list read as `reading`: False when it got a list
        read after it (shown, that one is newer). True marks it the tab's newest."""
        if self._shown.get(tab, 0) > reading:
            return False
        keep_latest(self._shown, tab, reading, MAX_TABS)
        return True

    def searched(self, tab: str, query: str) -> None:
        """The tab's search box shows `query` now (its search's event, or an event that set
        the box)."""
        keep_latest(self._queries, tab, query, MAX_TABS)

    def query(self, tab: str, carried: str) -> str:
        """The query to filter the tab's list by: the one its search box was last given,
        else `carried` (the one the event carried)."""
        return self._queries.get(tab, carried)
