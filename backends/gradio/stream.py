"""A session's event stream → coalesced Gradio updates.

`PageView` holds what one browser tab shows of one session (the chat and the panels) and
turns it into `{component: value}` updates of plain, wire-ready values. `stream_session` is
the body of every streaming handler: subscribe, run the action (send, retry, …), then
yield an update whenever the coalescer says so (and something changed), until the session
is idle. The subscription and the reader task are always closed, also when the browser
goes away mid-stream (Gradio closes the generator) or the handler is cancelled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Collection, Mapping
from typing import Any

import gradio as gr

from backends.gradio.coalesce import DEFAULT_INTERVAL_S, Coalescer
from backends.gradio.layout import Page
from backends.gradio.markdown import escape_html, fence
from backends.gradio.panels import (
    MemoryInfo,
    PanelState,
    autochat_idle_text,
    badge_html,
    code_language,
    memory_markdown,
    usage_markdown,
)
from backends.gradio.renderer import ChatView
from gui_agent.events import Subscription
from gui_agent.interpreter import Interpreter
from schema import Event, InterpreterState, MessageStarted, TextDelta, UsageReported

__all__ = ["PageView", "Updates", "no_change", "stream_session"]

logger = logging.getLogger(__name__)

Updates = dict[Any, Any]
"""`{component: value}`: what one yield of a handler changes on the page."""

_ACTIVE = (InterpreterState.RUNNING, InterpreterState.WAITING)


def no_change() -> Updates:
    """Leave every output as it is (Gradio's skip). A handler returns this rather than `{}`,
    and a streaming handler with nothing to show yields it once: one that yields nothing
    makes Gradio blank all its outputs."""
    value: Updates = gr.skip()
    return value


class PageView:
    """One tab's view of one session: chat + panels, and what was last sent of each."""

    def __init__(
        self,
        page: Page,
        chat: ChatView,
        panels: PanelState,
        *,
        languages: Collection[str | None] = (),
    ) -> None:
        self.page = page
        self.chat = chat
        self.panels = panels
        self._languages = languages
        self._sent: Updates = {}
        self._chat_version = -1

    @classmethod
    def of(
        cls,
        page: Page,
        interpreter: Interpreter,
        *,
        icons: Mapping[str, str],
        languages: Collection[str | None] = (),
    ) -> PageView:
        """The view of a session as it is now (history, state, open approvals, memory)."""
        session = interpreter.session
        chat = ChatView.from_history(session.history, icons=icons)
        if interpreter.busy:
            _catch_up(chat, interpreter)
        panels = PanelState(
            state=interpreter.state,
            agent=session.agent,
            title=session.title,
            total=session.usage,
            memory=MemoryInfo.of(interpreter.window()) if session.history else None,
            autochat=autochat_idle_text(
                session.autochat.enabled, interpreter.autochat_active, interpreter.autochat_turns
            ),
        )
        for approval in interpreter.pending_approvals:
            panels.approvals[approval.approval_id] = approval
        for event in interpreter.events_since(0):
            if isinstance(event, UsageReported):  # recent turns still in the buffer
                panels.apply(event)
        panels.total = session.usage
        return cls(page, chat, panels, languages=languages)

    def refresh_memory(self, interpreter: Interpreter) -> None:
        """Show the context window as it is now (after a turn: including the reply)."""
        if interpreter.session.history:
            self.panels.memory = MemoryInfo.of(interpreter.window())

    def apply(self, events: list[Event]) -> None:
        for event in events:
            self.chat.apply(event)
            self.panels.apply(event)

    def updates(self, *, full: bool = False) -> Updates:
        """Every component this view manages, or {} when nothing changed since last time.

        Unchanged components are sent again with the same value rather than left out:
        Gradio streams each output as a diff against its previous value, so a repeated
        value costs an empty diff, while a left-out one turns into a "no change" marker
        whose diff against the last value can reset props (a button's `interactive`).
        """
        values = self._values()
        changed = full or self.chat.version != self._chat_version or values != self._sent
        if not changed:
            return {}
        self._chat_version = self.chat.version
        self._sent = values
        return {self.page.chatbot: self.chat.messages(), **values}

    def _values(self) -> Updates:
        """Plain values only (strings): what the browser receives as is, so a streaming
        handler can skip Gradio's postprocessing. No `gr.update` here: Gradio builds a new
        component instance for every update dict (and for every left-out output) on every
        yield. The Stop button and the approval panel follow the badge and the approval
        title in the browser (page.js)."""
        page, panels = self.page, self.panels
        approval = panels.approval
        title, detail = "", ""
        if approval is not None:
            warning = " It changes things: check it first." if approval.destructive else ""
            title = (
                f'<span class="ga-approval">**Approval needed:** '
                f"{escape_html(approval.summary)}.{warning}</span>"
            )
            language = code_language(approval.language, self._languages)
            label = f"What will run ({approval.language or 'text'}):"
            detail = f"{label}\n\n{fence(approval.detail, language)}"
        return {
            page.badge: badge_html(panels.state),
            page.approval_title: title,
            page.approval_code: detail,
            page.approval_id: approval.approval_id if approval else "",
            page.autochat_status: panels.autochat,
            page.memory_panel: memory_markdown(panels.memory, self.chat.preview),
            page.usage_panel: usage_markdown(panels.turns, panels.total),
            page.role_picker: panels.agent.value,
        }


def _catch_up(chat: ChatView, interpreter: Interpreter) -> None:
    """Show the reply being streamed right now (from the session's event buffer)."""
    run_id = interpreter.session.run_id
    for event in interpreter.events_since(0):
        if event.run_id == run_id and isinstance(event, MessageStarted | TextDelta):
            chat.apply(event)


async def _next_event(events: AsyncIterator[Event]) -> Event | None:
    try:
        return await anext(events)
    except StopAsyncIteration:
        return None


async def stream_session(
    interpreter: Interpreter,
    build: Callable[[], PageView],
    *,
    action: Callable[[], Awaitable[object]] | None = None,
    first: Updates | None = None,
    interval_s: float = DEFAULT_INTERVAL_S,
) -> AsyncGenerator[Updates, None]:
    """Run `action` and yield page updates until the session is idle again.

    `build` makes the starting view; it runs right after subscribing, so no event is seen
    twice or missed. Deltas are coalesced to one update per `interval_s`; structural events
    are shown at once. `first` is merged into the first update (e.g. the new session id).
    An `InvalidRequest` from the action propagates before anything is yielded.
    """
    subscription: Subscription = interpreter.subscribe()
    events = subscription.until_idle()
    reader: asyncio.Task[Event | None] | None = None
    try:
        view = build()
        if action is not None:
            await action()
        running = interpreter.busy  # if so, an idle marker will end the subscription
        if not running:
            view.apply(subscription.pending())
        yield {**(first or {}), **view.updates(full=True)}
        if not running:
            return
        coalescer = Coalescer(interval_s)
        finished = False
        while not finished:
            if reader is None:
                # Take what is already there without waiting (a fast model publishes many
                # events per loop turn). Once the run task is done, every event it
                # published is in hand; its idle marker may be among them.
                for ready in subscription.pending():
                    coalescer.offer(ready)
                if not interpreter.busy:
                    finished = True
                elif not coalescer.due():
                    reader = asyncio.ensure_future(_next_event(events))
            if reader is not None:
                done, _ = await asyncio.wait({reader}, timeout=coalescer.timeout())
                if reader in done:
                    event = reader.result()
                    reader = None
                    if event is None:
                        finished = True
                    else:
                        coalescer.offer(event)
            if not (finished or coalescer.due()):
                continue
            view.apply(coalescer.take())
            if finished:
                view.refresh_memory(interpreter)
            update = view.updates()
            if update:
                yield update
    finally:
        if reader is not None and not reader.done():
            reader.cancel()
            await asyncio.wait({reader})
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
        subscription.close()
