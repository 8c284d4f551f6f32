"""Each open tab's keep-alive event, which also keeps a tab in step with its chat when the
chat moves on without it.

A tab shows its chat live only while one of its own streaming events runs (a send, a retry,
AutoChat, following after opening). A chat can also move on from elsewhere: a message sent
from another tab or through the HTTP API starts a run, another tab clears it or picks
another role. The tab would keep showing the chat as it was (STOP while it runs, no
approval panel, Stop disabled). So the keep-alive event listens to the chat the tab shows,
and when it moves on while none of the tab's streams shows it, it changes the tab's hidden
`tab_wake` box; that box's change event `settle`s the view (app.py), which shows the chat
as it is now and follows it while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import gradio as gr

from backends.gradio.handlers import Handlers, tab_of
from backends.gradio.stream import Updates, no_change
from schema import AgentSwitched, Event, InterpreterState, SessionUpdated, StateChanged

__all__ = ["KEEP_OPEN_S", "Presence", "moves_on"]

logger = logging.getLogger(__name__)


KEEP_OPEN_S = 15.0
"""How often the keep-alive event yields, so that Gradio notices a closed tab."""


def moves_on(event: Event) -> bool:
    """The event changes what a tab showing the chat must show: a run starts (a message,
    a retry, AutoChat), the history is cut (clear, retry, edit) or another role speaks."""
    if isinstance(event, StateChanged):
        return event.to_state is InterpreterState.RUNNING
    if isinstance(event, SessionUpdated):
        return "history_length" in event.fields
    return isinstance(event, AgentSwitched)


class Presence:
    """The keep-alive handler (it shares the page's `Handlers`)."""

    def __init__(self, handlers: Handlers, *, keep_open_s: float = KEEP_OPEN_S) -> None:
        self.handlers = handlers
        self.keep_open_s = keep_open_s

    async def keep_open(self, request: gr.Request) -> AsyncIterator[Updates]:
        """Holds the tab's event stream open for as long as the tab is, or until the server
        shuts down (`Handlers.closing`), and wakes the tab when its chat moves on elsewhere.

        Gradio's browser client opens its server-sent-event stream when an event starts and
        lets it close when none is left; an event sent while the stream is closing loses
        its reply, and the button that sent it stays busy. With this event always pending
        the stream never closes. It yields at least every `keep_open_s` so that Gradio
        notices a closed tab and ends it (a handler that never yields would hold its queue
        slot). At shutdown it ends at once, so the tab's connection does not hold the
        server up.
        """
        tab = tab_of(request)
        wakes = 0
        try:
            closing = self.handlers.closing
            yield no_change()
            while not closing.is_set():
                moved_on = await self._moved_on_elsewhere(tab, request)
                if closing.is_set():
                    break
                if moved_on:
                    wakes += 1
                    yield {self.handlers.page.tab_wake: str(wakes)}
                else:
                    yield no_change()
        finally:
            self.handlers.streams.forget(tab)

    async def _moved_on_elsewhere(self, tab: str, request: gr.Request | None) -> bool:
        """Wait, at most `keep_open_s`, until the chat the tab shows moves on while none of
        the tab's streams shows it. False when the time is up, the tab shows another view,
        the chat is closed (deleted, unloaded: looked up again next time) or the server
        closes."""
        streams = self.handlers.streams
        shown = streams.shown(tab)
        interpreter = await self.handlers.lookup(shown, request, quiet=True) if shown else None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.keep_open_s
        stops: list[asyncio.Future[Any]] = [
            asyncio.ensure_future(streams.moved(tab)),
            asyncio.ensure_future(self.handlers.closing.wait()),
        ]
        try:
            if interpreter is None:
                await _first_stop(stops, self.keep_open_s)
                return False
            with contextlib.closing(interpreter.subscribe()) as subscription:
                more = True
                while more and (left := deadline - loop.time()) > 0:
                    events, more = await _first(
                        subscription.next_events(stop_at_idle=False), stops, left
                    )
                    if any(f.done() for f in stops) or streams.shown(tab) != interpreter.id:
                        return False
                    if any(map(moves_on, events)) and not streams.showing(tab, interpreter.id):
                        return True
                await _first_stop(stops, deadline - loop.time())
            return False
        finally:
            await _cancel(stops)


async def _first(
    work: Awaitable[tuple[list[Event], bool]], stops: list[asyncio.Future[Any]], timeout_s: float
) -> tuple[list[Event], bool]:
    """`work`'s result, or no events (and more to come) if one of `stops` or the timeout
    came first."""
    working = asyncio.ensure_future(work)
    try:
        await asyncio.wait(
            [working, *stops], timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        if not working.done():
            await _cancel([working])
    return working.result() if not working.cancelled() else ([], True)


async def _first_stop(stops: list[asyncio.Future[Any]], timeout_s: float) -> None:
    """Until one of `stops` is done, or `timeout_s` passed."""
    await asyncio.wait(stops, timeout=max(timeout_s, 0), return_when=asyncio.FIRST_COMPLETED)


async def _cancel(tasks: list[asyncio.Future[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks)
