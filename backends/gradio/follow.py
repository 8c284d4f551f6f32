"""What a tab follows of changes made elsewhere to its user's chats: the chats list, and the
settings of the chat it shows.

A tab's chats list and its settings widgets (Title box, AutoChat switch and limits, model,
system prompt, temperature, the Advanced settings) are not part of the chat's streamed
view, so a change made in another tab or through the HTTP API would leave them as they
were. `TabNews` keeps, per open tab, what it has to catch up on, and a signal the tab's
keep-alive event waits on (presence.py); the keep-alive then changes the tab's hidden
`chats_wake` box, whose change event shows the news (`Presence.follow`).

Three kinds of news:

- a chat of the user's was created, imported, renamed or deleted, by whatever front end
  (another tab, this one, the HTTP API): the session manager's change feed says so
  (`SessionManager.changes`), and each open tab's keep-alive listens to it for its user
  (`changed`) and refreshes its list; so does a chat of the user's that starts or stops
  working or waiting for an approval, which the list says (`SessionManager.activity`, a
  feed of its own that the keep-alive listens to the same way);
- the user's list changed in a way the feed does not tell (a turn ended in another tab and
  moved its chat to the top, or gave it its first title): that tab's handler says so
  (`chats_changed`) and the user's other tabs refresh their lists;
- a field of the chat a tab shows changed (`SessionUpdated` with `title`, `autochat` or
  `settings`): the keep-alive listening to that chat `notice`s it, and the tab shows the
  new values of those fields only (an unsaved edit of another field stays). A new title
  the feed did not announce (a first message's) is news to the user's other tabs too.

A tab's own change comes back to it too. Shown again, it could undo what the person typed
since (a limit typed "1", then "12": the event of "1" would put "1" back), or refresh a list
the tab already shows. So the handlers say what they save (`saving`, right before the
change, with no await between), and an event that carries a value the tab saved is its own
echo, not news: each saved value is matched once. Echoes of a chat the keep-alive did not
listen to when the event came can never be matched: `listening` forgets them when it starts
listening. Of the list's changes, one the tab made names the tab as its `origin` (the
handlers pass their tab's key to the manager) and is not news to it; nor is a chat created
that the tab shows by the time it would be woken (its first message made it: `has_news`).

Everything kept per tab is bounded (`MAX_ECHOES`, `MAX_LIST_NEWS`) and dropped with the tab
(`forget`); the feed's listener is the keep-alive's, closed when it ends.

The page's load event lists the user's chats before the tab's keep-alive listens to the
feed (both start with the page, and either may run first): a chat made in between is in
neither. So the load, as it starts, says how many changes of the user's chats the feed has
announced (`listed`), and the keep-alive, once it listens, has the tab refresh its list if
the feed announced more since (`listening_to_list`). A load that starts after the keep-alive
listens misses nothing.

A keep-alive that ends while the tab stays open (the server restarted, the event failed) is
started again by the page (page.js), and what happened meanwhile was never kept for it. So a
keep-alive that starts again opens the tab's news as a `catch_up`: its whole list and every
followed field of the chat it shows are news (`follow` then compares them with what the tab
last got: presence.py). Each keep-alive holds the tab's news by its `lease`; a second one for
the same tab supersedes the first, which ends without dropping the second's news. A tab
catches up the same way on the chat's fields (not its list) when they changed after it
opened the chat but before its keep-alive listened to it (`missed`: presence.py).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pydantic import BaseModel

from backends.gradio.bounded import keep_latest
from gui_agent.manager import ChatChange, ChatChangeKind
from schema import SessionUpdated

__all__ = ["FOLLOWED_FIELDS", "TabNews", "as_published"]

logger = logging.getLogger(__name__)

FOLLOWED_FIELDS = ("title", "autochat", "settings", "allowed_tools")
"""The `session_updated` fields a tab shows outside the chat's streamed view (the tools
allowed for the session are in it too, but change while the chat is idle: another tab's
"Ask before every tool again")."""

MAX_ECHOES = 100
"""Values a tab saved that are remembered until their event comes (the oldest go first)."""

MAX_LIST_NEWS = 100
"""Changes of its chats list a tab keeps until it is woken; past that it just refreshes."""

MAX_LISTED_TABS = 10_000
"""Tabs whose load's count of changes is kept until their keep-alive listens (beyond it, the
oldest are forgotten: a change made between such a tab's load and its keep-alive is missed,
as before the count was kept)."""


def as_published(settings: BaseModel) -> object:
    """A settings object as `session_updated` carries it (what `TabNews.saving` takes)."""
    value: object = settings.model_dump(mode="json")
    return value


@dataclass(slots=True)
class _Tab:
    """One open tab's news: whose chats it lists, and what it has to catch up on."""

    owner: str
    lease: int = 0
    """Which of the tab's keep-alive events holds this news (`TabNews.open`)."""
    signal: asyncio.Event = field(default_factory=asyncio.Event)
    fields: set[str] = field(default_factory=set)
    """Fields of the chat the tab shows that changed elsewhere (shown by `take`)."""
    echoes: list[tuple[str, str, object]] = field(default_factory=list)
    """(session, field, value) the tab saved whose event has not come yet."""
    listed: list[ChatChange] = field(default_factory=list)
    """Changes of the user's chats list from the feed, not shown yet."""
    refresh: bool = False
    """The list changed in a way the feed does not tell (`chats_changed`), or `listed`
    overflowed: refresh it whatever `listed` holds."""
    removed: bool = False
    """The user was removed from the server's users: the tab's keep-alive ends."""
    saved: dict[tuple[str, str], int] = field(default_factory=dict)
    """(session, field) → the ticket of the tab's newest save of it (`in_order`)."""
    catch_up: bool = False
    """The keep-alive started again: the tab may have missed anything (`take_catch_up`)."""


class TabNews:
    """The news of every open tab (registered while its keep-alive event runs)."""

    def __init__(self) -> None:
        self._tabs: dict[str, _Tab] = {}
        self._leases = itertools.count(1)
        self._renamed: deque[tuple[str, str]] = deque(maxlen=MAX_ECHOES)
        """(session, title) of renames the feed announced lately: `notice` need not pass
        those on to the user's other tabs, the feed told them already."""
        self._listed: dict[str, int] = {}
        """Per tab whose page loaded, the feed's count of its user's changes when the load
        began (`listed`), until its keep-alive listens to the feed."""

    def open(self, tab: str, owner: str, *, catch_up: bool = False) -> int:
        """The tab's keep-alive event starts: news for `owner`'s chats reach it. Returns the
        event's lease on the tab's news (`holds`, `forget`).

        `catch_up`: the keep-alive starts again after one that ended (page.js), and the tab
        missed whatever happened meanwhile: it is woken at once to refresh its list and the
        followed fields of the chat it shows. A keep-alive of the tab that still runs is
        superseded: it no longer `holds` the news, and is woken to end; what the tab still
        had to hear, and the order of its saves (`in_order`), go to the new one."""
        lease = next(self._leases)
        old = self._tabs.get(tab)
        if old is not None and old.owner == owner:
            news = replace(old, lease=lease, signal=asyncio.Event())
        else:
            news = _Tab(owner, lease=lease)
        if old is not None:
            old.signal.set()
        if catch_up:
            news.catch_up = news.refresh = True
        if news.catch_up or news.refresh or news.listed or news.fields or news.removed:
            news.signal.set()
        self._tabs[tab] = news
        return lease

    def holds(self, tab: str, lease: int) -> bool:
        """The keep-alive event with this lease is the tab's latest (its news is kept)."""
        news = self._tabs.get(tab)
        return news is not None and news.lease == lease

    def following(self, tab: str) -> bool:
        """A keep-alive event of the tab runs: news reach it."""
        return tab in self._tabs

    def forget(self, tab: str, lease: int | None = None) -> None:
        """The tab is closed (its keep-alive with `lease` ended: only if no later one
        superseded it)."""
        if lease is None or self.holds(tab, lease):
            self._tabs.pop(tab, None)
            self._listed.pop(tab, None)

    def listed(self, tab: str, announced: int) -> None:
        """The tab's page load starts, and will list its user's chats as they are from now
        on; the feed has announced `announced` changes of them so far."""
        keep_latest(self._listed, tab, announced, MAX_LISTED_TABS)

    def listening_to_list(self, tab: str, announced: int) -> None:
        """The tab's keep-alive listens to the feed from now on, which has announced
        `announced` changes of the user's chats: a change announced after the tab's page
        load listed them, and before now, reached neither; the tab refreshes its list. (A
        load that lists them only after this call sees every change: nothing to do.)"""
        news = self._tabs.get(tab)
        since = self._listed.pop(tab, None)
        if news is None or since is None or since >= announced:
            return
        news.refresh = True
        news.signal.set()

    def listening(self, tab: str) -> None:
        """The tab's keep-alive starts listening to a chat: forget the tab's echoes (no
        event of a change saved before can reach it now) and the changed fields of the
        chat it showed before (its list is still refreshed if that was pending)."""
        news = self._tabs.get(tab)
        if news is not None:
            news.echoes.clear()
            news.fields.clear()

    def missed(self, tab: str) -> None:
        """The tab may have missed changes of the followed fields of the chat it shows (made
        after it opened the chat, before its keep-alive listened to it): `follow` compares
        them all with what the tab last got, as after a keep-alive started again."""
        news = self._tabs.get(tab)
        if news is not None:
            news.catch_up = True
            news.signal.set()

    def saving(self, tab: str, session_id: str, changes: Mapping[str, object]) -> None:
        """The tab saves these fields now (valued as `session_updated` carries them)."""
        news = self._tabs.get(tab)
        if news is None:
            return
        news.echoes.extend((session_id, name, value) for name, value in changes.items())
        del news.echoes[:-MAX_ECHOES]

    def in_order(self, tab: str, session_id: str, name: str, ticket: int) -> bool:
        """Whether the tab's save of the field `name` made with `ticket` is the newest of
        that field so far (it is remembered then). The saves skip Gradio's queue, so the
        server may handle them in another order than the tab made them; an older one
        handled after a newer must not undo it. Unnumbered saves (ticket 0: API callers,
        tests) and saves of a tab that is not open are always in order."""
        news = self._tabs.get(tab)
        if news is None or ticket <= 0:
            return True
        key = (session_id, name)
        if news.saved.get(key, 0) > ticket:
            return False
        keep_latest(news.saved, key, ticket, MAX_ECHOES)
        return True

    def notice(self, tab: str, session_id: str, event: SessionUpdated) -> None:
        """The chat the tab shows was updated: what of it is news to the tab (not its own
        echo) is kept for `take`, and a new title is news to the user's other tabs too."""
        news = self._tabs.get(tab)
        if news is None:
            return
        changed = set()
        for name in FOLLOWED_FIELDS:
            if name not in event.fields:
                continue
            echo = (session_id, name, event.fields[name])
            if echo in news.echoes:
                news.echoes.remove(echo)
            else:
                changed.add(name)
        if not changed:
            return
        news.fields |= changed
        news.signal.set()
        if "title" in changed and (session_id, event.fields["title"]) not in self._renamed:
            self.chats_changed(news.owner, by=tab)

    def chats_changed(self, owner: str, *, by: str) -> None:
        """`owner`'s chats list changed in a way the feed does not tell (`by` that tab,
        which shows it already)."""
        for tab, news in self._tabs.items():
            if news.owner == owner and tab != by:
                news.refresh = True
                news.signal.set()

    def changed(self, tab: str, change: ChatChange) -> None:
        """The session manager's feed (presence.py registers it per open tab): a change of
        the tab's user's chats list. Kept as news unless it is the tab's own echo."""
        news = self._tabs.get(tab)
        if news is None or news.owner != change.owner:
            return
        if change.kind is ChatChangeKind.OWNER_REMOVED:
            news.removed = True
            news.signal.set()
            return
        if change.kind is ChatChangeKind.RENAMED:
            renamed = (change.session_id, change.title)
            if renamed not in self._renamed:
                self._renamed.append(renamed)
        if change.origin == tab:
            return  # the tab made it, and shows its list as it is now
        news.listed.append(change)
        if len(news.listed) > MAX_LIST_NEWS:
            news.listed.clear()
            news.refresh = True
        news.signal.set()

    def has_news(self, tab: str, *, showing: str) -> bool:
        """The tab has news to be woken for, now that it shows `showing`: changes of its
        list made elsewhere, changed fields, or its user removed. A chat created that it
        shows is its own (its first message made it): dropped, and the tab is not woken
        for it alone."""
        news = self._tabs.get(tab)
        if news is None or not news.signal.is_set():
            return False
        news.listed = [c for c in news.listed if not _created_here(c, showing)]
        if news.listed or news.refresh or news.fields or news.removed or news.catch_up:
            return True
        news.signal.clear()
        return False

    def take_list(self, tab: str, *, showing: str) -> bool:
        """Whether the tab's list has news to show since the last `take_list`: False when
        there is none, or all there is is the tab's own (a chat created that it `showing`
        now: its first message made it)."""
        news = self._tabs.get(tab)
        if news is None:
            return False
        listed, news.listed = news.listed, []
        refresh, news.refresh = news.refresh, False
        return refresh or any(not _created_here(change, showing) for change in listed)

    def removed(self, tab: str) -> bool:
        """The tab's user was removed from the server's users."""
        news = self._tabs.get(tab)
        return news is not None and news.removed

    def pending(self, tab: str) -> bool:
        """The tab has news it was not woken for yet."""
        news = self._tabs.get(tab)
        return news is not None and news.signal.is_set()

    async def wait(self, tab: str) -> None:
        """Until the tab has news (at once if it has some already)."""
        news = self._tabs.get(tab)
        await (news.signal if news is not None else asyncio.Event()).wait()

    def told(self, tab: str) -> None:
        """The tab was woken for its news (more news wakes it again)."""
        news = self._tabs.get(tab)
        if news is not None:
            news.signal.clear()

    def take_catch_up(self, tab: str) -> bool:
        """Whether the tab has to catch up on everything (its keep-alive started again: `open`)
        since the last `take_catch_up`."""
        news = self._tabs.get(tab)
        if news is None:
            return False
        catch_up, news.catch_up = news.catch_up, False
        return catch_up

    def take(self, tab: str) -> set[str]:
        """The fields of the shown chat that changed elsewhere since the last `take`."""
        news = self._tabs.get(tab)
        if news is None:
            return set()
        fields, news.fields = news.fields, set()
        return fields


def _created_here(change: ChatChange, showing: str) -> bool:
    return change.kind is ChatChangeKind.CREATED and change.session_id == showing
