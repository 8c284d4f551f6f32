"""Per-session event fan-out: stamping, a replay buffer, and subscriptions."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Final

from schema import Event

logger = logging.getLogger(__name__)

IDLE: Final = object()
"""Marker put on subscriptions when the session's run task has ended (not an Event)."""

_CLOSED: Final = object()

MAX_BEHIND: Final = 5_000
"""Events a subscription may hold unread before the hub ends it (`Subscription.fell_behind`).

Only a reader that has stopped reading gets there: a page or `chat()` takes every ready
event at each wake, and an event stream's socket buffers hold thousands of events more
before its reader stops at all. 5,000 text deltas are a few MB (about 0.7 kB each); without
a bound, a frozen tab or a dead connection TCP has not noticed kept every event of every
later turn in memory. The events are all in the session's history or state as well: a
reader that was ended reloads (`since`, or the event stream's `resync`)."""
CHECK_EVERY: Final = 256
"""`publish` looks for stalled readers once every this many events, so a subscription holds
at most MAX_BEHIND + CHECK_EVERY events. (256: a new hub's first check point is then one of
Python's shared small ints, so an idle session pays only the slot that holds it.)"""


class Subscription:
    """An async iterator of one session's events from the moment it was opened.

    `async for event in sub` runs until the subscription is closed; `sub.until_idle()` ends
    when the session's run task has ended and every event before that was delivered.
    `await sub.next_events()` takes every event ready at once, for readers that want no
    generator between them and the events (`Interpreter.chat`).

    Events wait in a deque; one future wakes the reader. This is an asyncio.Queue without
    the parts nobody here uses (task_done), at half its cost per event. Like the queue, it
    belongs to one event loop and is not thread-safe.

    A reader that stops reading (a frozen tab, a connection nobody reads) is not waited for:
    once more than MAX_BEHIND events wait unread, the hub ends the subscription, drops what
    it held and sets `fell_behind`. The reader then sees it end as if closed, and should
    say so and catch up from the session (the hub's `since`, or a reload).
    """

    __slots__ = ("_hub", "_items", "_marks", "_waiter", "_woken", "fell_behind")

    def __init__(self, hub: EventHub) -> None:
        self._hub = hub
        self._items: deque[object] = deque()
        self._marks = 0  # IDLE and _CLOSED markers in _items: none means all are events
        self._waiter: asyncio.Future[None] | None = None
        self._woken = False  # the reader was woken and has not run since: it is not stalled
        self.fell_behind = False
        """The hub ended this subscription: its reader was more than MAX_BEHIND events
        behind. The events it had not read were dropped."""

    def _put(self, item: object) -> None:
        """Add a marker (IDLE or _CLOSED); events are added by `EventHub.publish`."""
        self._items.append(item)
        self._marks += 1
        if self._waiter is not None:
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        self._waiter = None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
            self._woken = True

    async def _wait(self) -> None:
        """Until something is in `_items`."""
        while not self._items:
            waiter = asyncio.get_running_loop().create_future()
            self._waiter = waiter
            try:
                await waiter
            finally:
                self._woken = False
                if self._waiter is waiter:
                    self._waiter = None

    @property
    def stalled(self) -> bool:
        """More than MAX_BEHIND events wait, and the reader is not about to take them (a
        reader woken by the first of a burst that has not run yet is not stalled)."""
        return len(self._items) > MAX_BEHIND and not self._woken

    def _end_behind(self) -> None:
        """The hub gives up on this reader: what it holds is dropped, and it ends."""
        dropped = len(self._items) - self._marks
        logger.warning(
            "session %s: an event reader stopped reading; ended it %d events behind",
            self._hub.session_id,
            dropped,
        )
        self.fell_behind = True
        self._hub.unsubscribe(self)
        self._items.clear()
        self._marks = 0
        self._put(_CLOSED)

    def _pop(self) -> object:
        item = self._items.popleft()
        if item is IDLE or item is _CLOSED:
            self._marks -= 1
        return item

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate(stop_at_idle=False)

    def until_idle(self) -> AsyncIterator[Event]:
        return self._iterate(stop_at_idle=True)

    async def _iterate(self, *, stop_at_idle: bool) -> AsyncIterator[Event]:
        items = self._items
        while True:
            if not items:
                await self._wait()
            item = self._pop()
            if item is _CLOSED:
                return
            if item is IDLE:
                if stop_at_idle:
                    return
                continue
            yield item  # type: ignore[misc]

    async def next_events(self, *, stop_at_idle: bool = True) -> tuple[list[Event], bool]:
        """Wait for events, then take every one ready, in order: `(events, more)`.

        `more` is False when the subscription ended behind them (closed, or the session
        went idle when `stop_at_idle`); the marker that ended it is consumed, as
        `until_idle` consumes it. Events taken are gone from the subscription.
        """
        items = self._items
        if not items:
            await self._wait()
        marks = self._marks
        if not marks or (marks == 1 and (items[-1] is IDLE or items[-1] is _CLOSED)):
            # Only events, or events then one marker (a turn's end): take them at C speed.
            events: list[Event] = list(items)  # type: ignore[arg-type]
            items.clear()
            if not marks:
                return events, True
            self._marks = 0
            end = events.pop()
            return events, not (end is _CLOSED or stop_at_idle)
        taken: list[Event] = []
        while items:
            item = self._pop()
            if item is _CLOSED or (item is IDLE and stop_at_idle):
                return taken, False
            if item is not IDLE:
                taken.append(item)  # type: ignore[arg-type]
        return taken, True

    def pending(self) -> list[Event]:
        """Events delivered but not yet consumed, without waiting."""
        items = []
        while self._items:
            item = self._pop()
            if item is _CLOSED:
                self._items.appendleft(item)  # the reader still has to see the end
                self._marks += 1
                break
            if item is not IDLE:
                items.append(item)
        return items  # type: ignore[return-value]

    def close(self) -> None:
        self._hub.unsubscribe(self)
        self._put(_CLOSED)

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class EventHub:
    """Stamps `seq`/`session_id`/`run_id` on events and delivers them to every subscriber.

    Keeps the last `buffer` events so a reconnecting client can catch up (`since(seq)`).
    Publishing never waits for a reader: every CHECK_EVERY events it ends the subscriptions
    of readers that stopped reading (`Subscription.fell_behind`).
    """

    __slots__ = ("_check_at", "_closed", "_recent", "_seq", "_subscribers", "session_id")

    def __init__(self, session_id: str, *, buffer: int = 1000, seq: int = 0) -> None:
        self.session_id = session_id
        self._seq = seq
        self._check_at = seq + CHECK_EVERY  # the seq at which to look for stalled readers
        self._recent: deque[Event] = deque(maxlen=buffer)
        self._subscribers: list[Subscription] = []
        self._closed = False

    @property
    def seq(self) -> int:
        return self._seq

    def publish(self, event: Event, run_id: str) -> Event:
        # The envelope is stamped straight into the instance dict: events do not validate
        # assignment, and pydantic's __setattr__ would cost more than the rest of publishing.
        fields = event.__dict__
        fields["seq"] = self._seq = seq = self._seq + 1
        fields["session_id"] = self.session_id
        fields["run_id"] = run_id
        self._recent.append(event)
        for subscriber in self._subscribers:  # events skip Subscription._put: the hot path
            subscriber._items.append(event)
            if subscriber._waiter is not None:
                subscriber._wake()
        if seq == self._check_at:  # (an int compare is the cheapest test here)
            self._end_stalled()
        return event

    def _end_stalled(self) -> None:
        self._check_at += CHECK_EVERY
        for subscriber in [s for s in self._subscribers if s.stalled]:
            subscriber._end_behind()

    def idle(self) -> None:
        for subscriber in self._subscribers:
            subscriber._put(IDLE)

    def subscribe(self) -> Subscription:
        """A subscription from now on; one that has already ended when the hub is closed
        (its session was deleted or unloaded while the caller held it), so its reader
        does not wait for events that will never come."""
        subscription = Subscription(self)
        if self._closed:
            subscription._put(_CLOSED)
        else:
            self._subscribers.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        if subscription in self._subscribers:
            self._subscribers.remove(subscription)

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)

    def since(self, seq: int) -> list[Event]:
        """Buffered events with a sequence number above `seq`, oldest first."""
        return [event for event in self._recent if event.seq > seq]

    def close(self) -> None:
        self._closed = True
        for subscriber in list(self._subscribers):
            subscriber.close()
