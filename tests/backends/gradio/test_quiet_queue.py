"""Gradio's event queue, quiet while nothing happens (quiet_queue.py): its intervals follow
its use, and an idle server's event loop wakes about a hundred times a second, not a
thousand; in a real browser, a page's events still run at once."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import gradio as gr
import pytest
from gradio.queueing import EventQueue, Queue
from playwright.sync_api import Page, expect

from backends.gradio.media import mounted_page
from backends.gradio.quiet_queue import (
    BUSY_POLL_S,
    BUSY_PROGRESS_S,
    BUSY_S,
    HOLD_S,
    IDLE_POLL_S,
    IDLE_PROGRESS_S,
    QuietQueue,
    quiet,
)
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import bot_messages, send, wait_idle


def queue_of(server: LiveServer) -> QuietQueue:
    """The page's event queue, as the server runs it."""
    assert server.app is not None
    page = mounted_page(server.app)
    assert page is not None
    queue = page.get_blocks()._queue
    assert isinstance(queue, QuietQueue)
    return queue


def wakeups_per_s(server: LiveServer, seconds: float = 1.0) -> float:
    """How often the server's event loop woke, over `seconds` (each turn of the loop)."""
    loop: Any = server.loop
    turns = [0]
    turn = loop._run_once

    def counted() -> None:
        turns[0] += 1
        turn()

    loop._run_once = counted  # (read by run_forever on every turn)
    try:
        time.sleep(seconds)
    finally:
        del loop._run_once
    return turns[0] / seconds


def quiet_spell(queue: QuietQueue, within_s: float = 10.0) -> None:
    """Make the queue's last event as old as a quiet spell, once the events already on
    their way (a page's load events, on a loaded machine) have run."""
    deadline = time.monotonic() + within_s
    while True:
        queue.last_push = queue.clock() - BUSY_S  # (as if the last event came that long ago)
        if not queue.in_use():
            return
        assert time.monotonic() < deadline, "the page's events never ended"
        time.sleep(0.05)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_queue_looks_for_work_often_only_while_it_is_in_use() -> None:
    blocks = gr.Blocks()
    blocks.queue()
    clock = Clock()
    assert quiet(blocks, clock)
    queue = blocks._queue
    assert isinstance(queue, QuietQueue)
    queue.active_jobs = [None] * 4  # (as Queue.start makes them)

    def intervals() -> tuple[float, float]:
        return queue.sleep_when_free, queue.progress_update_sleep_when_free

    assert intervals() == (BUSY_POLL_S, BUSY_PROGRESS_S)  # in use as it starts
    clock.now += BUSY_S
    assert intervals() == (IDLE_POLL_S, IDLE_PROGRESS_S)
    queue.last_push = clock.now  # an event came in
    assert intervals() == (BUSY_POLL_S, BUSY_PROGRESS_S)
    clock.now += BUSY_S - 0.1
    assert intervals() == (BUSY_POLL_S, BUSY_PROGRESS_S)
    clock.now += 0.2
    assert intervals() == (IDLE_POLL_S, IDLE_PROGRESS_S)
    queue.active_jobs = [[]] * 4  # every slot taken: one ending is noticed soon
    assert intervals() == (BUSY_POLL_S, BUSY_PROGRESS_S)
    queue.sleep_when_free = 5.0  # Gradio's fixed interval does not come back
    queue.active_jobs = [None] * 4
    assert intervals() == (IDLE_POLL_S, IDLE_PROGRESS_S)


async def test_a_push_waits_for_the_events_before_it_to_start_so_they_keep_their_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    blocks = gr.Blocks()
    blocks.queue()
    assert quiet(blocks)
    queue = blocks._queue
    assert isinstance(queue, QuietQueue)
    queue.active_jobs = [None] * 4  # free slots: a waiting event is one the loop has not seen
    waiting = EventQueue("fn", None)
    queue.event_queue_per_concurrency_id = {"fn": waiting}
    events: list[Any] = waiting.queue  # (names stand for Gradio's events here)
    pushed: list[str] = []

    async def gradios_push(_queue: Queue, body: Any, _request: Any, _user: Any) -> Any:
        pushed.append(body)  # (the order events go into Gradio's queues)
        events.append(body)  # and wait there for the loop
        return True, body, "success"

    monkeypatch.setattr(Queue, "push", gradios_push)
    await queue.push("first", None, None)
    later = [asyncio.ensure_future(queue.push(name, None, None)) for name in ("second", "third")]
    for _ in range(5):
        await asyncio.sleep(0)
    assert pushed == ["first"]  # held while "first" waits to be noticed
    events.clear()  # the loop starts it
    await asyncio.wait_for(asyncio.gather(*later), 1)  # ("third" waits at most HOLD_S)
    assert pushed == ["first", "second", "third"]
    queue.active_jobs = [[]] * 4  # no free slot: what waits, waits for one; nothing is held
    events.append("running long")
    await asyncio.wait_for(queue.push("fourth", None, None), HOLD_S / 2)
    assert pushed[-1] == "fourth"


async def test_a_blocks_without_gradios_queue_is_left_as_it_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    blocks = gr.Blocks()  # never queued: no queue of Gradio's to make quiet
    blocks._queue = None  # type: ignore[assignment]
    assert not quiet(blocks)
    assert "stays as Gradio made it" in caplog.text


async def test_the_queue_never_summarises_its_events_with_pandas(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Gradio summarised every event it recorded with pandas after each event (6-11 ms of
    CPU each), for a monitoring page this app does not serve."""
    blocks = gr.Blocks()
    blocks.queue()
    assert quiet(blocks)
    queue = blocks._queue
    assert isinstance(queue, QuietQueue)
    queue.ANAYLTICS_CACHE_FREQUENCY = 1  # Gradio's default: after every event

    def summarised(records: Any) -> Any:
        raise AssertionError("Gradio's queue summarised its events")

    monkeypatch.setattr(Queue, "_get_df", staticmethod(summarised))
    record: dict[str, float | str | None] = {
        "time": 0.0,
        "status": "success",
        "process_time": 0.1,
        "function": "send",
    }
    queue.event_analytics = {"e1": record}
    queue.events_recorded = 1
    assert queue.compute_analytics_summary([record]) == {"functions": {}}


def test_an_idle_server_wakes_its_loop_about_a_hundred_times_a_second(
    server: LiveServer,
) -> None:
    queue = queue_of(server)
    queue.last_push = queue.clock() - BUSY_S  # (as if the last event came that long ago)
    assert not queue.in_use()
    # Quiet: 50 looks for an event, 10 for progress, 10 of uvicorn's a second. Gradio's
    # own queue woke the loop 1,100-1,700 times a second here.
    assert wakeups_per_s(server) < 300


@pytest.mark.browser
def test_a_pages_events_after_a_quiet_spell_still_run_and_stream(
    server: LiveServer, tab: Page
) -> None:
    queue = queue_of(server)
    quiet_spell(queue)
    send(tab, "hello")  # the first event after the quiet spell
    expect(bot_messages(tab).last).to_contain_text("You said: hello")
    wait_idle(tab)
    assert queue.in_use()  # the page's events were pushed just now
    send(tab, "again")
    expect(bot_messages(tab).last).to_contain_text("You said: again")
