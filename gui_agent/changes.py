"""The change feed of each owner's chats list.

Whoever shows that list (a page tab) registers a listener for the owner; the session manager
announces every chat of theirs created, imported, renamed or deleted through it, whichever
front end asked, and the owner's removal. Nothing is queued: a listener is called at once,
inside the call that made the change, and must only take note (set a flag, wake a task).
What was announced before a listener registered never reaches it; the feed counts each
owner's changes (`announced`), so that a list shown before its listener registered can
tell whether it missed one.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from gui_agent.log_text import loggable, loggable_traceback

__all__ = ["ChangeFeed", "ChangeListener", "ChatChange", "ChatChangeKind", "Listening"]

logger = logging.getLogger(__name__)


class ChatChangeKind(enum.StrEnum):
    """What happened to an owner's chats list."""

    CREATED = "created"
    IMPORTED = "imported"
    RENAMED = "renamed"
    DELETED = "deleted"
    OWNER_REMOVED = "owner_removed"
    """The owner may no longer sign in: every chat of theirs was stopped and closed."""
    ACTIVITY = "activity"
    """A chat began or ended working (a turn runs), or waiting for the person's approval.
    Announced on a feed of its own (`SessionManager.activity`), not on the chats list's:
    what a list shows of each chat's state is read from the live sessions."""


@dataclass(frozen=True, slots=True)
class ChatChange:
    """One change of an owner's chats list. `session_id` and `title` are empty for
    OWNER_REMOVED; `title` is the chat's title after the change (for DELETED, the title it
    had). `origin` is what the caller that made the change named itself (a page tab: its
    key), so that its own listener can tell the change is its own; empty when it did not
    say."""

    kind: ChatChangeKind
    owner: str
    session_id: str = ""
    title: str = ""
    origin: str = ""


ChangeListener = Callable[[ChatChange], None]


class Listening:
    """A listener's registration with a `ChangeFeed`: `close()` (or leaving the `with`
    block) removes it. Closing twice is harmless."""

    __slots__ = ("_feed", "_listener", "owner")

    def __init__(self, feed: ChangeFeed, owner: str, listener: ChangeListener) -> None:
        self._feed: ChangeFeed | None = feed
        self.owner = owner
        self._listener = listener

    def close(self) -> None:
        feed, self._feed = self._feed, None
        if feed is not None:
            feed._remove(self.owner, self._listener)

    def __enter__(self) -> Listening:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ChangeFeed:
    """Listeners of each owner's chats list. Holds the registered listeners (an owner with
    none is forgotten) and a count of each owner's changes; a change is handed to the
    owner's listeners and not kept."""

    def __init__(self) -> None:
        self._listeners: dict[str, list[ChangeListener]] = {}
        self._announced: dict[str, int] = {}
        """Per owner who had a change (one entry per user), how many were announced."""

    def listen(self, owner: str, listener: ChangeListener) -> Listening:
        """Call `listener` with every change of `owner`'s chats until the returned
        registration is closed."""
        self._listeners.setdefault(owner, []).append(listener)
        return Listening(self, owner, listener)

    def listener_count(self, owner: str | None = None) -> int:
        """Listeners registered for `owner` (for every owner when None)."""
        if owner is not None:
            return len(self._listeners.get(owner, ()))
        return sum(map(len, self._listeners.values()))

    def announced(self, owner: str) -> int:
        """How many changes of `owner`'s chats were announced so far: a list built when it
        was n, and a listener registered when it is more, missed a change in between."""
        return self._announced.get(owner, 0)

    def announce(self, change: ChatChange) -> None:
        """Hand `change` to its owner's listeners, in the order they registered. A listener
        that raises is logged; the others are still called, and the change stands."""
        self._announced[change.owner] = self._announced.get(change.owner, 0) + 1
        for listener in tuple(self._listeners.get(change.owner, ())):
            try:
                listener(change)
            except Exception as error:
                logger.error(
                    "a listener of %s's chats failed on %s: %s",
                    loggable(change.owner),
                    change,
                    loggable_traceback(error),
                )

    def _remove(self, owner: str, listener: ChangeListener) -> None:
        listeners = self._listeners.get(owner)
        if listeners is None:
            return
        for index, registered in enumerate(listeners):
            if registered is listener:
                del listeners[index]
                break
        if not listeners:
            del self._listeners[owner]
