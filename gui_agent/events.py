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

    Events wait in a deque; one future wakes the reader. This is an asyncio.Queue without
    the parts nobody here uses (bounds, task_done), at half its cost per event. Like the
    queue, it belongs to one event loop and is not thread-safe.
    """

    __slots__ = ("_hub", "_items", "_waiter")

    def __init__(self, hub: EventHub) -> None:
        self._hub = hub
        self._items: deque[object] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def _put(self, item: object) -> None:
        self._items.append(item)
        if self._waiter is not None:
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        self._waiter = None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate(stop_at_idle=False)

    def until_idle(self) -> AsyncIterator[Event]:
        return self._iterate(stop_at_idle=True)

    async def _iterate(self, *, stop_at_idle: bool) -> AsyncIterator[Event]:
        items = self._items
        while True:
            while not items:
                waiter = asyncio.get_running_loop().create_future()
                self._waiter = waiter
                try:
                    await waiter
                finally:
                    if self._waiter is waiter:
                        self._waiter = None
            item = items.popleft()
            if item is _CLOSED:
                return
            if item is IDLE:
                if stop_at_idle:
                    return
                continue
            yield item  # type: ignore[misc]

    def pending(self) -> list[Event]:
        """Events delivered but not yet consumed, without waiting."""
        items = []
        while self._items:
            item = self._items.popleft()
            if item is _CLOSED:
                self._items.appendleft(item)  # the reader still has to see the end
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
        self._seq += 1
        # The envelope is stamped straight into the instance dict: events do not validate
        # assignment, and pydantic's __setattr__ would cost more than the rest of publishing.
        fields = event.__dict__
        fields["seq"] = self._seq
        fields["session_id"] = self.session_id
        fields["run_id"] = run_id
        self._recent.append(event)
        for subscriber in self._subscribers:  # Subscription._put, inlined: the hot path
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
