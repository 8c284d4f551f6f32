"""Per-session event fan-out: stamping, a replay buffer, and subscriptions."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Final

from schema import Event

IDLE: Final = object()
"""Marker put on subscriptions when the session's run task has ended (not an Event)."""

_CLOSED: Final = object()


class Subscription:
    """An async iterator of one session's events from the moment it was opened.

    `async for event in sub` runs until the subscription is closed; `sub.until_idle()` ends
    when the session's run task has ended and every event before that was delivered.
    `await sub.next_events()` takes every event ready at once, for readers that want no
    generator between them and the events (`Interpreter.chat`).

    Events wait in a deque; one future wakes the reader. This is an asyncio.Queue without
    the parts nobody here uses (bounds, task_done), at half its cost per event. Like the
    queue, it belongs to one event loop and is not thread-safe.
    """

    __slots__ = ("_hub", "_items", "_marks", "_waiter")

    def __init__(self, hub: EventHub) -> None:
        self._hub = hub
        self._items: deque[object] = deque()
        self._marks = 0  # IDLE and _CLOSED markers in _items: none means all are events
        self._waiter: asyncio.Future[None] | None = None

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

    async def _wait(self) -> None:
        """Until something is in `_items`."""
        while not self._items:
            waiter = asyncio.get_running_loop().create_future()
            self._waiter = waiter
            try:
                await waiter
            finally:
                if self._waiter is waiter:
                    self._waiter = None

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
    """

    __slots__ = ("_recent", "_seq", "_subscribers", "session_id")

    def __init__(self, session_id: str, *, buffer: int = 1000, seq: int = 0) -> None:
        self.session_id = session_id
        self._seq = seq
        self._recent: deque[Event] = deque(maxlen=buffer)
        self._subscribers: list[Subscription] = []

    @property
    def seq(self) -> int:
        return self._seq

    def publish(self, event: Event, run_id: str) -> Event:
        # The envelope is stamped straight into the instance dict: events do not validate
        # assignment, and pydantic's __setattr__ would cost more than the rest of publishing.
        fields = event.__dict__
        fields["seq"] = self._seq = self._seq + 1
        fields["session_id"] = self.session_id
        fields["run_id"] = run_id
        self._recent.append(event)
        for subscriber in self._subscribers:  # events skip Subscription._put: the hot path
            subscriber._items.append(event)
            if subscriber._waiter is not None:
                subscriber._wake()
        return event

    def idle(self) -> None:
        for subscriber in self._subscribers:
            subscriber._put(IDLE)

    def subscribe(self) -> Subscription:
        subscription = Subscription(self)
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
        for subscriber in list(self._subscribers):
            subscriber.close()
