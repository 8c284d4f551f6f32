"""Gradio's event queue, quiet while nothing happens: `quiet(blocks)`.

Gradio's queue has no wake-up: it looks for a new event every millisecond
(`Queue.sleep_when_free`; 50 ms on Windows) and for progress to report every 10 ms
(`progress_update_sleep_when_free`), whether anything happens or not. An idle server woke
its event loop 1,100-1,700 times a second for that and kept 9 % of a core busy, all day, with
or without a page open (`tests/bench/bench_server.py` measures it).

`QuietQueue` keeps Gradio's intervals while there is work (an event waiting, every slot
taken, or an event pushed in the last `BUSY_S` seconds) and looks `IDLE_POLL_S` apart
otherwise. The price: the first event after a quiet spell waits up to `IDLE_POLL_S` (20 ms)
to start, and every event after it, while the page is in use, starts as soon as before. A push
waits for the events pushed before it to start (`QuietQueue.push`), so they start in the order
they came, which Gradio's own queue left to chance for events that came close together.

It also never summarises the events it recorded (`QuietQueue.compute_analytics_summary`):
Gradio did that with pandas after every event, for a monitoring page this app does not serve.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import gradio as gr
from gradio.queueing import Queue

__all__ = [
    "BUSY_POLL_S",
    "BUSY_PROGRESS_S",
    "BUSY_S",
    "HOLD_S",
    "IDLE_POLL_S",
    "IDLE_PROGRESS_S",
    "QuietQueue",
    "quiet",
]

logger = logging.getLogger(__name__)

BUSY_POLL_S = 0.001
"""How often a queue in use looks for a new event: Gradio's own interval."""
BUSY_PROGRESS_S = 0.01
"""How often a queue in use looks for progress to report: Gradio's own interval."""
IDLE_POLL_S = 0.02
"""How often a quiet queue looks for a new event (a first event waits at most this)."""
IDLE_PROGRESS_S = 0.1
"""How often a quiet queue looks for progress (Gradio's own interval on Windows)."""
BUSY_S = 10.0
"""How long after an event is pushed the queue counts as in use."""
HOLD_S = 2 * IDLE_POLL_S + 0.01
"""The longest a push waits for the events pushed before it to start (see `push`)."""


class QuietQueue(Queue):
    """Gradio's queue, whose two polling intervals depend on whether it is in use (see the
    module). Made from Gradio's by `quiet`; `last_push` is when the last event came in (on
    the monotonic clock), `clock` the clock read."""

    last_push: float
    clock: Callable[[], float]  # time.monotonic, or a test's clock
    held: asyncio.Lock  # (first come, first served)

    def in_use(self) -> bool:
        """An event came in lately, one is waiting, or every slot is taken (one ending
        must be noticed soon to start the next)."""
        if self.clock() - self.last_push < BUSY_S:
            return True
        return len(self) > 0 or None not in self.active_jobs

    @property  # (Gradio's plain attribute, read before every wait)
    def sleep_when_free(self) -> float:
        return BUSY_POLL_S if self.in_use() else IDLE_POLL_S

    @sleep_when_free.setter
    def sleep_when_free(self, value: float) -> None:
        """Gradio sets its fixed interval in `__init__`; the intervals here replace it."""

    @property
    def progress_update_sleep_when_free(self) -> float:
        return BUSY_PROGRESS_S if self.in_use() else IDLE_PROGRESS_S

    @progress_update_sleep_when_free.setter
    def progress_update_sleep_when_free(self, value: float) -> None:
        """As `sleep_when_free`'s setter."""

    def compute_analytics_summary(self, records: Any) -> Any:
        """The summary Gradio started with, never computed again. Gradio builds it with
        pandas from every event it recorded (up to 10,000), after every event, for its
        monitoring page, which stays off here (`enable_monitoring`): that cost 6-11 ms of
        CPU per event, on every page's every click and save."""
        return self.cached_event_analytics_summary

    def unnoticed(self) -> bool:
        """Events wait that a free slot could start: the loop has yet to look."""
        return len(self) > 0 and None in self.active_jobs

    async def push(self, *args: Any, **kwargs: Any) -> Any:
        """Gradio's push, in the order the events came. Gradio starts the events waiting
        together in random order across event kinds (it shuffles its queues), and after a
        quiet spell its loop looks only `IDLE_POLL_S` apart: so while events pushed before
        this one wait to be noticed, it waits for them to start (at most `HOLD_S`), and
        pushes held so go on in the order they came."""
        loop = asyncio.get_running_loop()
        async with self.held:
            deadline = loop.time() + HOLD_S
            # (Gradio's loop signals nothing when it starts an event: its queues are read)
            while self.unnoticed() and loop.time() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(BUSY_POLL_S)
            self.last_push = self.clock()
            return await super().push(*args, **kwargs)


def quiet(blocks: gr.Blocks, clock: Callable[[], float] = time.monotonic) -> bool:
    """Make the queue of `blocks` (after `blocks.queue()`) a `QuietQueue`. False, with a
    warning, when the Blocks has no queue Gradio's way (a Gradio whose inside changed):
    the page then works as Gradio made it, only not quiet."""
    queue = getattr(blocks, "_queue", None)
    if type(queue) is not Queue:
        logger.warning("Gradio's event queue is not where it was; it stays as Gradio made it")
        return False
    queue.__class__ = QuietQueue
    for name in ("sleep_when_free", "progress_update_sleep_when_free"):
        queue.__dict__.pop(name, None)
    quieted: QuietQueue = queue  # type: ignore[assignment]  # (the class was just set)
    quieted.clock = clock
    quieted.held = asyncio.Lock()
    quieted.last_push = clock()  # in use from the start (the pages reconnecting to it)
    return True
