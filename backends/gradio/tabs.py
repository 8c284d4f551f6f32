"""The streaming events each browser tab has running, and what may end or wake them.

A tab's view of a session is kept up to date by streaming events (a send, a retry, AutoChat,
or following a busy session after opening it). Gradio delivers a tab's updates in the order
its handlers produce them, but `cancels=` only asks a stream to end: a stream between two
yields can still deliver an update after the event that replaced the view (New chat,
another chat, delete, import, replay), and the page would show the old chat again.

So every such event carries a ticket, a number the browser counts up as it triggers them
(`ticket_of`). An event that replaces the view, or starts a stream of its own, first
`supersede`s: the tab's streams with a lower ticket are woken, yield nothing more (but one
"no change": Gradio's last message of a stream repeats its last update), and are waited
for; one of them that registers only later (its handler was slow to start) is ended at
once. A stream triggered after the click (a send right after New chat) is left alone, and
the older event, `overtaken`, does not reply over it. Which session the tab's latest event
shows is remembered (`shown`), for replies that would otherwise go by what the browser said
before the view changed (the chats list after a turn).

A first message makes the chat it is sent to, and until that chat exists the tab's latest
view is still the empty new chat: a `settle` running meanwhile (the page load's follow-up,
which a message sent at once can overtake) would show that over the new chat. So such a send
holds an `Opening` until its stream starts, and `settle` waits for the tab's openings first.

`wake` asks the streams showing a session to render again for something that is not one of
its events (a message queued behind the running turn); `moved` waits for the tab's next view
change (the keep-alive event listens to the chat the tab shows: presence.py). An event that
opens a chat in the tab says up to which of the chat's events its view and settings boxes
are (`built`): the keep-alive starts listening only after that, and reads what it missed in
between from there (`built_at`). A tab's entry is dropped with its last stream, or with
`forget` when the tab closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

from backends.gradio.bounded import keep_latest

__all__ = ["END_TIMEOUT_S", "Opening", "TabStreams", "Watch", "send_number_of", "ticket_of"]

logger = logging.getLogger(__name__)

END_TIMEOUT_S = 3.0
"""How long an event that replaces the view waits for the tab's older streams to end."""

MAX_TABS = 10_000
"""Tabs whose last ticket is remembered (beyond it, the oldest are forgotten)."""

SHOWN_KEPT = 16
"""Per tab, how many of its latest view-changing events `made_before` remembers."""


def ticket_of(value: object) -> int:
    """The ticket the browser sent (0 when there is none: API calls, tests). A send's
    ticket carries its number among the tab's sends after a colon (send_order.py)."""
    try:
        return int(str(value or 0).partition(":")[0])
    except ValueError:
        return 0


def send_number_of(value: object) -> int:
    """The send's number among its tab's sends, from the ticket the page sent ("17:3": the
    tab's event 17, its send 3); 0 when there is none (API calls, tests)."""
    _event, _colon, number = str(value or "").partition(":")
    try:
        return max(0, int(number))
    except ValueError:
        return 0


class Watch:
    """One running streaming event of a tab, showing one session ("" for none)."""

    __slots__ = ("_finished", "_poke", "ended", "session_id", "ticket")

    def __init__(self, session_id: str, ticket: int) -> None:
        self.session_id = session_id
        self.ticket = ticket
        self.ended = False
        """The tab shows something else now: yield nothing more, and end."""
        self._poke = asyncio.Event()
        self._finished = asyncio.Event()

    def wake(self) -> None:
        """Have the stream render again (or notice that it has `ended`)."""
        self._poke.set()

    async def woken(self) -> None:
        """Until `wake` is called (at once if it was called since the last time)."""
        await self._poke.wait()
        self._poke.clear()

    def end(self) -> None:
        self.ended = True
        self._poke.set()


class Opening:
    """An event of a tab making the chat the tab will show (a first message); `close` it
    once its stream has started (or it failed). Closing twice is harmless."""

    __slots__ = ("_done", "_owner", "tab")

    def __init__(self, owner: TabStreams, tab: str) -> None:
        self._owner = owner
        self.tab = tab
        self._done = asyncio.Event()

    def close(self) -> None:
        if not self._done.is_set():
            self._done.set()
            self._owner._opened(self)

    async def wait(self) -> None:
        await self._done.wait()


class TabStreams:
    """The running streams of every tab, by tab key (user and Gradio session)."""

    def __init__(self) -> None:
        self._running: dict[str, list[Watch]] = {}
        self._floor: dict[str, tuple[int, str]] = {}
        """Per tab, the ticket of the latest event that superseded the streams before it, and
        the session it shows."""
        self._moves: dict[str, asyncio.Event] = {}
        """Per tab waiting in `moved`, the signal of its next view change."""
        self._openings: dict[str, list[Opening]] = {}
        """Per tab, its events making the chat it will show (`opening`)."""
        self._shown_at: dict[str, dict[int, str]] = {}
        """Per tab, the chat each of its latest view-changing events showed, by ticket, in
        the order they superseded (`made_before`)."""
        self._built: dict[str, tuple[str, int]] = {}
        """Per tab, the chat it last opened and the `seq` of the chat's last event then
        (`built`)."""

    @contextlib.contextmanager
    def watch(self, tab: str, session_id: str, ticket: int = 0) -> Iterator[Watch]:
        """Register a stream for as long as the `with` block runs. A stream whose event was
        triggered before one that already superseded it is ended from the start."""
        watch = Watch(session_id, ticket)
        if ticket < self._latest(tab):
            watch.end()
        self._running.setdefault(tab, []).append(watch)
        try:
            yield watch
        finally:
            watches = self._running.get(tab, [])
            if watch in watches:
                watches.remove(watch)
            if not watches:
                self._running.pop(tab, None)
            watch._finished.set()

    def opening(self, tab: str) -> Opening:
        """An event of the tab starts making the chat it will show: until the `Opening` is
        closed, `opened` waits for it."""
        opening = Opening(self, tab)
        self._openings.setdefault(tab, []).append(opening)
        return opening

    def _opened(self, opening: Opening) -> None:
        openings = self._openings.get(opening.tab, [])
        if opening in openings:
            openings.remove(opening)
        if not openings:
            self._openings.pop(opening.tab, None)

    async def opened(self, tab: str, *, before: Opening | None = None) -> None:
        """Until every chat the tab's events are making exists and is shown (at once if
        there is none); with `before`, only those whose events came before it."""
        while openings := self._openings.get(tab):
            if openings[0] is before:
                return
            await openings[0].wait()

    def made_before(self, tab: str, ticket: int) -> str:
        """The chat the tab shows as of its event numbered `ticket`, if an earlier event of
        the tab opened or made it ("" if none did, or it showed a new chat), whatever its
        later events showed since: the page may not know it yet (a message sent right after
        the first one of a new chat)."""
        earlier = [t for t in self._shown_at.get(tab, ()) if 0 < t < ticket]
        return self._shown_at[tab][max(earlier)] if earlier else ""

    def showing(self, tab: str, session_id: str) -> bool:
        """The tab has a live stream of this session."""
        return any(w.session_id == session_id and not w.ended for w in self._running.get(tab, ()))

    def wake(self, session_id: str) -> None:
        """Every tab's live streams of this session render again."""
        for watches in self._running.values():
            for watch in watches:
                if watch.session_id == session_id:
                    watch.wake()

    async def supersede(
        self, tab: str, ticket: int, session_id: str, *, timeout_s: float = END_TIMEOUT_S
    ) -> None:
        """The tab shows `session_id` from the event numbered `ticket` on: end its streams
        of events triggered before (all of them for 0) and wait until they have (at most
        `timeout_s`)."""
        if ticket > 0:
            self._remember_shown(tab, ticket, session_id)
        if ticket and ticket >= self._latest(tab):
            keep_latest(self._floor, tab, (ticket, session_id), MAX_TABS)
            moved = self._moves.pop(tab, None)
            if moved is not None:
                moved.set()
        older = [w for w in self._running.get(tab, ()) if not ticket or w.ticket < ticket]
        if not older:
            return
        for watch in older:
            watch.end()
        waiting = [asyncio.ensure_future(watch._finished.wait()) for watch in older]
        try:
            _done, late = await asyncio.wait(waiting, timeout=timeout_s)
        finally:
            for task in waiting:
                task.cancel()
            await asyncio.wait(waiting)
        if late:
            logger.warning("%d stream(s) of a tab did not end in %.1fs", len(late), timeout_s)

    def _remember_shown(self, tab: str, ticket: int, session_id: str) -> None:
        """The tab's event numbered `ticket` shows `session_id`, whether or not a later event
        came first: a send triggered between the two still comes from this chat."""
        shown = self._shown_at.get(tab, {})
        keep_latest(shown, ticket, session_id, SHOWN_KEPT)
        keep_latest(self._shown_at, tab, shown, MAX_TABS)  # (the oldest tabs go first)

    def overtaken(self, tab: str, ticket: int) -> bool:
        """An event triggered after this one has already superseded it (its reply would
        land over a newer view: leave the page as it is)."""
        return bool(ticket) and ticket < self._latest(tab)

    def shown(self, tab: str) -> str | None:
        """The session the tab's latest event shows ("" a new chat; None if not known)."""
        latest = self._floor.get(tab)
        return None if latest is None else latest[1]

    def gone(self, tab: str, session_id: str) -> None:
        """`session_id` was deleted: a tab that shows it shows no chat from now on (as at its
        latest event: any later event of the tab supersedes this)."""
        latest = self._floor.get(tab)
        if latest is not None and latest[1] == session_id:
            keep_latest(self._floor, tab, (latest[0], ""), MAX_TABS)

    def assume(self, tab: str, session_id: str) -> None:
        """The tab shows `session_id`, as the browser says, if the server knows nothing of
        what it shows (its keep-alive starts again after the server restarted or forgot the
        tab: presence.py). Shown by no event: any event of the tab supersedes it."""
        if tab not in self._floor:
            keep_latest(self._floor, tab, (0, session_id), MAX_TABS)

    def built(self, tab: str, session_id: str, seq: int) -> None:
        """The tab opens `session_id` (its view and settings boxes) as it is after its event
        numbered `seq`."""
        keep_latest(self._built, tab, (session_id, seq), MAX_TABS)

    def built_at(self, tab: str, session_id: str) -> int | None:
        """The `seq` the tab last opened `session_id` at, once (None: it did not open it since
        the last call, or opened another chat since)."""
        built = self._built.pop(tab, None)
        return built[1] if built is not None and built[0] == session_id else None

    def _latest(self, tab: str) -> int:
        latest = self._floor.get(tab)
        return 0 if latest is None else latest[0]

    async def moved(self, tab: str) -> None:
        """Until the tab's next event that replaces its view (or starts a stream)."""
        await self._moves.setdefault(tab, asyncio.Event()).wait()

    def forget(self, tab: str) -> None:
        """The tab is closed."""
        self._floor.pop(tab, None)
        self._shown_at.pop(tab, None)
        self._built.pop(tab, None)
        moved = self._moves.pop(tab, None)
        if moved is not None:
            moved.set()
