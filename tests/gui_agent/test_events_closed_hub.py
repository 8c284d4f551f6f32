"""A subscription opened on a closed hub (its session deleted or unloaded while the caller
held it) has already ended: its reader is not left waiting for events that never come."""

from __future__ import annotations

import asyncio

from gui_agent.events import EventHub
from schema import TextDelta


async def test_a_subscription_opened_after_close_ends_at_once() -> None:
    hub = EventHub("s")
    hub.close()
    late = hub.subscribe()

    assert await asyncio.wait_for(late.next_events(), 5) == ([], False)
    assert [e async for e in hub.subscribe()] == []
    assert [e async for e in hub.subscribe().until_idle()] == []
    assert hub.subscriber_count == 0
    assert not late.fell_behind  # it ended because the session closed, not for lagging


async def test_publishing_after_close_reaches_no_late_subscriber() -> None:
    hub = EventHub("s")
    hub.close()
    late = hub.subscribe()
    event = hub.publish(TextDelta(message_id="m", delta="x"), "r")

    assert event.seq == 1 and hub.since(0) == [event]  # still stamped and buffered
    assert late.pending() == []
