"""A subscription whose reader stopped reading is ended, not kept growing: the hub drops
what it held once more than MAX_BEHIND events wait, and publishing goes on for everyone
else as before."""

from __future__ import annotations

import asyncio

from gui_agent.events import CHECK_EVERY, MAX_BEHIND, EventHub, Subscription
from schema import Event, TextDelta


def delta(text: str) -> TextDelta:
    return TextDelta(message_id="m", delta=text)


def publish_many(hub: EventHub, count: int) -> list[Event]:
    return [hub.publish(delta(str(n)), "r") for n in range(count)]


def held(sub: Subscription) -> int:
    # What the subscription keeps in memory (events and markers): the thing that must stay
    # bounded. There is no public way to count it without taking it.
    return len(sub._items)


async def wait_until_waiting(sub: Subscription) -> None:
    """Until a reader task has reached its wait on `sub` (it runs at the next loop turn)."""
    while sub._waiter is None:
        await asyncio.sleep(0)


def test_a_reader_that_never_reads_is_ended_and_what_it_held_is_dropped() -> None:
    hub = EventHub("s")
    stalled = hub.subscribe()
    most = 0
    for n in range(MAX_BEHIND + 2 * CHECK_EVERY):
        hub.publish(delta(str(n)), "r")
        most = max(most, held(stalled))

    assert stalled.fell_behind
    assert hub.subscriber_count == 0
    assert most <= MAX_BEHIND + CHECK_EVERY
    assert held(stalled) == 1  # only the end mark is left


async def test_an_ended_reader_sees_its_subscription_end_and_can_tell_why() -> None:
    hub = EventHub("s")
    stalled = hub.subscribe()
    publish_many(hub, MAX_BEHIND + CHECK_EVERY)
    hub.idle()

    assert await stalled.next_events(stop_at_idle=False) == ([], False)
    assert stalled.fell_behind
    stalled.close()  # what every reader does when it ends: harmless here
    assert [e async for e in stalled] == []


async def test_a_reader_that_keeps_up_is_never_ended() -> None:
    hub = EventHub("s")
    reading = hub.subscribe()
    taken = 0
    for _ in range(4):
        publish_many(hub, MAX_BEHIND // 2)
        events, more = await reading.next_events()
        taken += len(events)
        assert more

    assert taken == 2 * MAX_BEHIND
    assert not reading.fell_behind and hub.subscriber_count == 1


async def test_a_reader_woken_by_a_burst_is_not_ended_before_it_runs() -> None:
    """A model with no latency publishes a whole reply before the reader runs once: the
    reader was woken, it is not stalled, and it gets every event."""
    hub = EventHub("s")
    sub = hub.subscribe()
    reader = asyncio.create_task(sub.next_events())
    await wait_until_waiting(sub)

    burst = publish_many(hub, 3 * MAX_BEHIND)

    events, more = await asyncio.wait_for(reader, 10)
    assert events == burst and more
    assert not sub.fell_behind and hub.subscriber_count == 1


async def test_publishing_goes_on_for_other_readers_and_the_replay_buffer() -> None:
    hub = EventHub("s", buffer=10)
    stalled, reading = hub.subscribe(), hub.subscribe()
    published: list[Event] = []
    taken: list[Event] = []
    chunks = MAX_BEHIND // CHECK_EVERY + 2
    for _ in range(chunks):
        published += publish_many(hub, CHECK_EVERY)
        events, _ = await reading.next_events()
        taken += events

    assert stalled.fell_behind and not reading.fell_behind
    assert taken == published
    assert [e.seq for e in published] == list(range(1, chunks * CHECK_EVERY + 1))
    assert hub.since(hub.seq - 3) == published[-3:]


def test_the_bound_holds_when_numbering_starts_elsewhere() -> None:
    """A hub rebuilt after a restart numbers on from a stored seq."""
    hub = EventHub("s", seq=12_345)
    stalled = hub.subscribe()
    most = 0
    for n in range(MAX_BEHIND + 2 * CHECK_EVERY):
        hub.publish(delta(str(n)), "r")
        most = max(most, held(stalled))

    assert stalled.fell_behind and most <= MAX_BEHIND + CHECK_EVERY


def test_stalled_readers_are_looked_for_every_check_every_events() -> None:
    hub = EventHub("s", seq=7)
    stalled = hub.subscribe()
    publish_many(hub, MAX_BEHIND + 1)
    check_point = 7 + -(-(MAX_BEHIND + 1) // CHECK_EVERY) * CHECK_EVERY  # the next one
    publish_many(hub, check_point - hub.seq - 1)
    assert not stalled.fell_behind  # one event before the check point
    publish_many(hub, 1)
    assert stalled.fell_behind
