"""What a tab follows of changes made elsewhere to its user's chats: the chats list, and the
settings of the chat it shows.

A tab's chats list and its settings widgets (Title box, AutoChat switch and limits, model,
system prompt, temperature) are not part of the chat's streamed view, so a change made in
another tab or through the HTTP API would leave them as they were. `TabNews` keeps, per open
tab, what it has to catch up on, and a signal the tab's keep-alive event waits on
(presence.py); the keep-alive then changes the tab's hidden `chats_wake` box, whose change
event shows the news (`Presence.follow`).

Two kinds of news:

- the user's chats changed (one created, deleted, imported, renamed, or a turn ended and
  moved one to the top): every other tab of the same user refreshes its list
  (`chats_changed`, called by the handler that made the change);
- a field of the chat a tab shows changed (`SessionUpdated` with `title`, `autochat` or
  `settings`): the keep-alive listening to that chat `notice`s it, and the tab shows the
  new values of those fields only (an unsaved edit of another field stays).

A tab's own change comes back to it as an event too. Shown again, it could undo what the
person typed since (a limit typed "1", then "12": the event of "1" would put "1" back). So
the handlers say what they save (`saving`, right before the change, with no await between),
and an event that carries a value the tab saved is its own echo, not news: each saved value
is matched once. Echoes of a chat the keep-alive did not listen to when the event came can
never be matched: `listening` forgets them when it starts listening.

Not followed: a chat created or deleted through the HTTP API, by tabs that do not show it
(the session manager announces no such change; a tab showing a chat does see its title
and settings change, whoever changes them).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel

from schema import SessionUpdated

__all__ = ["FOLLOWED_FIELDS", "TabNews", "as_published"]

logger = logging.getLogger(__name__)

FOLLOWED_FIELDS = ("title", "autochat", "settings")
"""The `session_updated` fields a tab shows outside the chat's streamed view."""

MAX_ECHOES = 100
"""Values a tab saved that are remembered until their event comes (the oldest go first)."""


def as_published(settings: BaseModel) -> object:
    """A settings object as `session_updated` carries it (what `TabNews.saving` takes)."""
    value: object = settings.model_dump(mode="json")
    return value


@dataclass(slots=True)
class _Tab:
    """One open tab's news: whose chats it lists, and what it has to catch up on."""

    owner: str
    signal: asyncio.Event = field(default_factory=asyncio.Event)
    fields: set[str] = field(default_factory=set)
    """Fields of the chat the tab shows that changed elsewhere (shown by `take`)."""
    echoes: list[tuple[str, str, object]] = field(default_factory=list)
    """(session, field, value) the tab saved whose event has not come yet."""


class TabNews:
    """The news of every open tab (registered while its keep-alive event runs)."""

    def __init__(self) -> None:
        self._tabs: dict[str, _Tab] = {}

    def open(self, tab: str, owner: str) -> None:
        """The tab's keep-alive event starts: news for `owner`'s chats reach it."""
        self._tabs.setdefault(tab, _Tab(owner))

    def forget(self, tab: str) -> None:
        """The tab is closed."""
        self._tabs.pop(tab, None)

    def listening(self, tab: str) -> None:
        """The tab's keep-alive starts listening to a chat: forget the tab's echoes (no
        event of a change saved before can reach it now) and the changed fields of the
        chat it showed before (its list is still refreshed if that was pending)."""
        news = self._tabs.get(tab)
        if news is not None:
            news.echoes.clear()
            news.fields.clear()

    def saving(self, tab: str, session_id: str, changes: Mapping[str, object]) -> None:
        """The tab saves these fields now (valued as `session_updated` carries them)."""
        news = self._tabs.get(tab)
        if news is None:
            return
        news.echoes.extend((session_id, name, value) for name, value in changes.items())
        del news.echoes[:-MAX_ECHOES]

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
        if "title" in changed:
            self.chats_changed(news.owner, by=tab)

    def chats_changed(self, owner: str, *, by: str) -> None:
        """`owner`'s chats list changed (`by` that tab, which shows it already)."""
        for tab, news in self._tabs.items():
            if news.owner == owner and tab != by:
                news.signal.set()

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

    def take(self, tab: str) -> set[str]:
        """The fields of the shown chat that changed elsewhere since the last `take`."""
        news = self._tabs.get(tab)
        if news is None:
            return set()
        fields, news.fields = news.fields, set()
        return fields
