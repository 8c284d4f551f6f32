"""EventHub and Subscription: stamping, the replay buffer, and `next_events` batching."""

from __future__ import annotations

import asyncio

import pytest

from gui_agent.events import EventHub, Subscription
from schema import InterpreterState, StateChanged, TextDelta


def delta(text: str) -> TextDelta:
    return TextDelta(message_id="m", delta=text)


def marks(sub: Subscription) -> int:
    # `_marks` counts the IDLE/_CLOSED markers waiting in the deque and picks the fast path of
    # `next_events`; a stale count would silently change what later calls return, so the
    # tests read the private attribute to catch drift before it shows.
    return sub._marks


def hub_and_sub() -> tuple[EventHub, Subscription]:
    hub = EventHub("s")
    return hub, hub.subscribe()


# --- next_events: plain events ----------------------------------------------------------


async def test_next_events_takes_every_ready_event_in_order() -> None:
    hub, sub = hub_and_sub()
    events = [hub.publish(delta(t), "r") for t in "abc"]

    taken, more = await sub.next_events()

    assert [e.delta for e in taken] == ["a", "b", "c"]
    assert all(a is b for a, b in zip(taken, events, strict=True))
    assert more is True
    assert sub.pending() == []
    assert marks(sub) == 0


async def test_a_subscription_sees_only_events_published_after_it_opened() -> None:
    hub = EventHub("s")
    hub.publish(delta("before"), "r")
    sub = hub.subscribe()
    after = hub.publish(delta("after"), "r")

    assert await sub.next_events() == ([after], True)


# --- next_events: idle markers ----------------------------------------------------------


@pytest.mark.parametrize(("stop_at_idle", "more"), [(True, False), (False, True)])
async def test_idle_at_the_end_stops_only_when_asked(stop_at_idle: bool, more: bool) -> None:
    hub, sub = hub_and_sub()
    e1, e2 = hub.publish(delta("1"), "r"), hub.publish(delta("2"), "r")
    hub.idle()

    assert await sub.next_events(stop_at_idle=stop_at_idle) == ([e1, e2], more)
    assert marks(sub) == 0
    assert sub.pending() == []


async def test_idle_alone_ends_with_no_events() -> None:
    hub, sub = hub_and_sub()
    hub.idle()

    assert await sub.next_events() == ([], False)
    assert marks(sub) == 0


async def test_idle_in_the_middle_splits_the_batch() -> None:
    hub, sub = hub_and_sub()
    e1 = hub.publish(delta("1"), "r")
    hub.idle()
    e2 = hub.publish(delta("2"), "r")

    assert await sub.next_events(stop_at_idle=True) == ([e1], False)
    assert marks(sub) == 0
    assert await sub.next_events(stop_at_idle=True) == ([e2], True)
    assert marks(sub) == 0
    assert sub.pending() == []


async def test_idle_in_the_middle_is_skipped_when_not_stopping_at_idle() -> None:
    hub, sub = hub_and_sub()
    e1 = hub.publish(delta("1"), "r")
    hub.idle()
    e2 = hub.publish(delta("2"), "r")

    assert await sub.next_events(stop_at_idle=False) == ([e1, e2], True)
    assert marks(sub) == 0
    assert sub.pending() == []


async def test_two_idles_end_two_turns() -> None:
    hub, sub = hub_and_sub()
    e1 = hub.publish(delta("1"), "r1")
    hub.idle()
    e2 = hub.publish(delta("2"), "r2")
    hub.idle()
    assert marks(sub) == 2

    assert await sub.next_events() == ([e1], False)
    assert marks(sub) == 1
    assert await sub.next_events() == ([e2], False)  # now the fast path: one marker, at the end
    assert marks(sub) == 0
    assert sub.pending() == []


async def test_two_idles_back_to_back() -> None:
    hub, sub = hub_and_sub()
    e1 = hub.publish(delta("1"), "r")
    hub.idle()
    hub.idle()

    assert await sub.next_events() == ([e1], False)
    assert marks(sub) == 1
    assert await sub.next_events() == ([], False)
    assert marks(sub) == 0


async def test_two_idles_are_both_skipped_when_not_stopping_at_idle() -> None:
    hub, sub = hub_and_sub()
    e1 = hub.publish(delta("1"), "r")
    hub.idle()
    e2 = hub.publish(delta("2"), "r")
    hub.idle()

    assert await sub.next_events(stop_at_idle=False) == ([e1, e2], True)
    assert marks(sub) == 0
    assert sub.pending() == []


# --- next_events: close -----------------------------------------------------------------


async def test_close_ends_it_after_the_events_before_it() -> None:
    for stop_at_idle in (True, False):
        hub, sub = hub_and_sub()
        e1, e2 = hub.publish(delta("1"), "r"), hub.publish(delta("2"), "r")
        sub.close()
        late = hub.publish(delta("late"), "r")  # unsubscribed: never delivered

        assert await sub.next_events(stop_at_idle=stop_at_idle) == ([e1, e2], False)
        assert marks(sub) == 0
        assert late not in sub._items
        assert hub.subscriber_count == 0


async def test_hub_close_closes_its_subscriptions() -> None:
    hub, sub = hub_and_sub()
    e1 = hub.publish(delta("1"), "r")
    hub.close()

    assert await sub.next_events() == ([e1], False)
    assert hub.subscriber_count == 0


async def test_idle_then_close_when_stopping_at_idle() -> None:
    hub, sub = hub_and_sub()
    e1 = hub.publish(delta("1"), "r")
    hub.idle()
    sub.close()
    assert marks(sub) == 2

    assert await sub.next_events(stop_at_idle=True) == ([e1], False)
    assert marks(sub) == 1
    assert await sub.next_events(stop_at_idle=True) == ([], False)  # the close
    assert marks(sub) == 0
    assert not sub._items


async def test_idle_then_close_when_not_stopping_at_idle() -> None:
    hub, sub = hub_and_sub()
    e1 = hub.publish(delta("1"), "r")
    hub.idle()
    e2 = hub.publish(delta("2"), "r")
    sub.close()

    assert await sub.next_events(stop_at_idle=False) == ([e1, e2], False)
    assert marks(sub) == 0
    assert not sub._items


async def test_an_idle_before_events_and_a_close_takes_one_marker_per_call() -> None:
    # [IDLE, e1, CLOSED]: the first call stops at the idle without touching what follows;
    # the second takes e1 and the close.
    hub, sub = hub_and_sub()
    hub.idle()
    e1 = hub.publish(delta("1"), "r")
    sub.close()

    assert await sub.next_events(stop_at_idle=True) == ([], False)
    assert marks(sub) == 1
    assert await sub.next_events(stop_at_idle=True) == ([e1], False)
    assert marks(sub) == 0


# --- next_events: waiting ---------------------------------------------------------------


async def test_a_waiting_reader_is_woken_by_a_publish() -> None:
    hub, sub = hub_and_sub()
    reader = asyncio.create_task(sub.next_events())
    await asyncio.sleep(0)
    assert not reader.done()  # nothing to take yet: it waits

    async def publisher() -> TextDelta:
        return hub.publish(delta("x"), "r")  # type: ignore[return-value]

    event = await asyncio.create_task(publisher())

    assert await asyncio.wait_for(reader, 1) == ([event], True)
    assert sub._waiter is None


async def test_a_waiting_reader_gets_everything_published_before_it_runs() -> None:
    hub, sub = hub_and_sub()
    reader = asyncio.create_task(sub.next_events())
    await asyncio.sleep(0)

    e1, e2 = hub.publish(delta("1"), "r"), hub.publish(delta("2"), "r")
    hub.idle()

    assert await asyncio.wait_for(reader, 1) == ([e1, e2], False)
    assert marks(sub) == 0


async def test_a_waiting_reader_is_woken_by_idle_and_by_close() -> None:
    hub, sub = hub_and_sub()
    reader = asyncio.create_task(sub.next_events())
    await asyncio.sleep(0)
    hub.idle()
    assert await asyncio.wait_for(reader, 1) == ([], False)

    reader = asyncio.create_task(sub.next_events(stop_at_idle=False))
    await asyncio.sleep(0)
    sub.close()
    assert await asyncio.wait_for(reader, 1) == ([], False)
    assert marks(sub) == 0


async def test_a_cancelled_reader_leaves_no_waiter_behind() -> None:
    hub, sub = hub_and_sub()
    reader = asyncio.create_task(sub.next_events())
    await asyncio.sleep(0)
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)
    assert sub._waiter is None

    e1 = hub.publish(delta("1"), "r")
    assert await sub.next_events() == ([e1], True)


# --- mixing the APIs --------------------------------------------------------------------


async def test_until_idle_consumes_its_marker_for_next_events() -> None:
    hub, sub = hub_and_sub()
    e1 = hub.publish(delta("1"), "r")
    hub.idle()

    assert [e async for e in sub.until_idle()] == [e1]
    assert marks(sub) == 0

    e2 = hub.publish(delta("2"), "r")
    assert await sub.next_events() == ([e2], True)  # no stale marker: more is True
    assert marks(sub) == 0


async def test_pending_consumes_idle_markers() -> None:
    hub, sub = hub_and_sub()
    e1 = hub.publish(delta("1"), "r")
    hub.idle()
    e2 = hub.publish(delta("2"), "r")

    assert sub.pending() == [e1, e2]
    assert marks(sub) == 0

    e3 = hub.publish(delta("3"), "r")
    assert await sub.next_events() == ([e3], True)


async def test_pending_leaves_the_close_for_next_events() -> None:
    hub, sub = hub_and_sub()
    e1 = hub.publish(delta("1"), "r")
    hub.idle()
    sub.close()

    assert sub.pending() == [e1]
    assert marks(sub) == 1  # the close marker is put back
    assert await sub.next_events() == ([], False)
    assert marks(sub) == 0


async def test_next_events_then_async_for_until_close() -> None:
    hub, sub = hub_and_sub()
    e1 = hub.publish(delta("1"), "r")
    hub.idle()
    e2 = hub.publish(delta("2"), "r")
    hub.idle()
    e3 = hub.publish(delta("3"), "r")
    sub.close()

    assert await sub.next_events() == ([e1], False)
    assert [e async for e in sub] == [e2, e3]
    assert marks(sub) == 0


async def test_context_manager_closes_the_subscription() -> None:
    hub = EventHub("s")
    async with hub.subscribe() as sub:
        assert hub.subscriber_count == 1
    assert hub.subscriber_count == 0
    assert await sub.next_events() == ([], False)


# --- publishing -------------------------------------------------------------------------


def test_publish_stamps_seq_session_and_run() -> None:
    hub = EventHub("session-1", seq=41)
    first = hub.publish(delta("a"), "run-a")
    second = hub.publish(
        StateChanged(from_state=InterpreterState.INIT, to_state=InterpreterState.RUNNING),
        "run-b",
    )

    assert (first.seq, first.session_id, first.run_id) == (42, "session-1", "run-a")
    assert (second.seq, second.session_id, second.run_id) == (43, "session-1", "run-b")
    assert hub.seq == 43


def test_publish_returns_the_same_event_it_delivers() -> None:
    hub, sub = hub_and_sub()
    event = delta("a")

    assert hub.publish(event, "r") is event
    assert sub.pending()[0] is event


def test_since_returns_buffered_events_after_seq() -> None:
    hub = EventHub("s", seq=10)
    events = [hub.publish(delta(t), "r") for t in "abcd"]

    assert hub.since(10) == events
    assert hub.since(12) == events[2:]
    assert [e.seq for e in hub.since(12)] == [13, 14]
    assert hub.since(14) == []


def test_since_is_limited_to_the_buffer() -> None:
    hub = EventHub("s", buffer=2)
    events = [hub.publish(delta(t), "r") for t in "abc"]

    assert hub.since(0) == events[1:]


def test_every_subscriber_gets_every_event() -> None:
    hub = EventHub("s")
    one, two = hub.subscribe(), hub.subscribe()
    event = hub.publish(delta("a"), "r")

    assert one.pending() == [event]
    assert two.pending() == [event]
