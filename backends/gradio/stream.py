"""A session's event stream → coalesced Gradio updates.

`PageView` holds what one browser tab shows of one session (the chat and the panels) and
turns it into `{component: value}` updates of plain, wire-ready values. `stream_session` is
the body of every streaming handler: subscribe, run the action (send, retry, …), then
yield an update whenever the coalescer says so (and something changed), until the session
is idle. The subscription and the reader task are always closed, also when the browser
goes away mid-stream (Gradio closes the generator) or the handler is cancelled. A stream
registered as a tab's `Watch` (tabs.py) yields nothing more once the tab shows something
else, and renders again when woken (a message was queued).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Mapping,
    Sequence,
)
from typing import Any

import gradio as gr

from backends.gradio.coalesce import DEFAULT_INTERVAL_S, Coalescer
from backends.gradio.layout import Page
from backends.gradio.looks import body_markdown
from backends.gradio.markdown import MediaLink, escape_html, escape_title, fence
from backends.gradio.panels import (
    AutoChatStatus,
    MemoryInfo,
    PanelState,
    allowed_markdown,
    badge_html,
    code_language,
    memory_markdown,
    tools_markdown,
    usage_markdown,
)
from backends.gradio.renderer import ChatbotMessage, ChatView
from backends.gradio.switches import placed_notes
from backends.gradio.tabs import Watch
from gui_agent.events import Subscription
from gui_agent.interpreter import Interpreter
from schema import (
    Event,
    Message,
    MessageStarted,
    ModelRetrying,
    TextDelta,
    ToolCallOutput,
    UsageReported,
)

__all__ = ["PageView", "Updates", "no_change", "stream_session"]

logger = logging.getLogger(__name__)

Updates = dict[Any, Any]
"""`{component: value}`: what one yield of a handler changes on the page."""

QUEUED_MARK = "_queued: the agent reads it when the current step ends_"
QUEUED_BEHIND_APPROVAL_MARK = "_queued: the agent reads it once you answer the open approval_"
"""Under a queued message while an approval is open: that step ends only with the answer."""


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
        queued: Sequence[Message] = (),
        session_id: str = "",
    ) -> None:
        self.page = page
        self.session_id = session_id
        """The session shown ("" for none); a full update says it too."""
        self.chat = chat
        self.panels = panels
        self._languages = languages
        self._queued = queued
        """The session's messages waiting behind the running turn (its live inbox)."""
        self._sent: Updates = {}
        self._chat_version = -1
        self._queued_sent: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        page: Page,
        interpreter: Interpreter,
        *,
        icons: Mapping[str, str],
        languages: Collection[str | None] = (),
        media: MediaLink | None = None,
    ) -> PageView:
        """The view of a session as it is now (history, state, open approvals, memory);
        `media`: where its images are served (None: inline)."""
        session = interpreter.session
        recent = interpreter.events_since(0)
        notes = placed_notes(recent, session.history)
        chat = ChatView.from_history(
            session.history, icons=icons, notes=notes, media=media, agent=session.agent
        )
        if interpreter.busy:
            _catch_up(chat, interpreter)
        panels = PanelState(
            state=interpreter.state,
            agent=session.agent,
            title=session.title,
            total=session.usage,
            memory=MemoryInfo.of(interpreter.window()) if session.history else None,
            auto=AutoChatStatus(enabled=session.autochat.enabled),
            allowed=interpreter.allowed_tools,
            tools=interpreter.tool_standings,
        )
        for approval in interpreter.pending_approvals:
            panels.approvals[approval.approval_id] = approval
        for event in recent:
            if isinstance(event, UsageReported):  # recent turns still in the buffer
                panels.apply(event)
            elif interpreter.autochat_active:  # where the AutoChat run is
                panels.auto.apply(event)
                chat.autochat.apply(event)
            else:  # why the last run stopped, while that is still news
                panels.auto.replay(event)
        panels.auto.active = interpreter.autochat_active
        panels.auto.enabled = session.autochat.enabled
        panels.total = session.usage
        return cls(
            page, chat, panels, languages=languages, queued=session.inbox, session_id=session.id
        )

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
        queued = tuple(message.id for message in self._queued)
        changed = (
            full
            or self.chat.version != self._chat_version
            or queued != self._queued_sent
            or values != self._sent
        )
        if not changed:
            return {}
        self._chat_version = self.chat.version
        self._queued_sent = queued
        self._sent = values
        link = self.chat.media
        mark = QUEUED_MARK if self.panels.approval is None else QUEUED_BEHIND_APPROVAL_MARK
        messages = self.chat.messages(then=[_queued_entry(m, link, mark) for m in self._queued])
        if full:
            values = {self.page.session_id: self.session_id, **values}
        return {self.page.chatbot: messages, **values}

    @property
    def size(self) -> int:
        """How many chatbot messages this view shows (the queued ones too)."""
        return self.chat.size + len(self._queued)

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
            # The approval's id in a class: page.js keeps a panel this tab answered hidden
            # until the page shows another approval (or none), whatever arrives first.
            mark = "".join(c for c in approval.approval_id if c.isalnum() or c in "-_")
            title = (
                f'<span class="ga-approval ga-approval-{mark}">**Approval needed:** '
                f"{escape_html(approval.summary)}.{warning}</span>"
            )
            language = code_language(approval.language, self._languages)
            # (the language name comes from the tool or an external interpreter: shown as
            # written, never read as markup)
            # (neutral: a file's contents or a call's arguments are not run)
            label = f"In full ({escape_title(approval.language or 'text')}):"
            detail = f"{label}\n\n{fence(approval.detail, language)}"
        return {
            page.badge: badge_html(panels.state, stoppable=panels.stoppable),
            page.approval_title: title,
            page.approval_code: detail,
            page.approval_id: approval.approval_id if approval else "",
            page.autochat_status: panels.autochat,
            page.memory_panel: memory_markdown(panels.memory, self.chat.preview),
            page.usage_panel: usage_markdown(panels.turns, panels.total, newest=panels.turns_seen),
            page.allowed_panel: allowed_markdown(panels.allowed),
            page.tools_panel: tools_markdown(panels.tools()),
            page.role_picker: panels.agent.value,
        }


def _queued_entry(message: Message, link: MediaLink | None, mark: str) -> ChatbotMessage:
    """A message of the person's waiting behind the running turn, marked as such."""
    body = body_markdown(message.type, message.content, None, message.images, link)
    return {
        "role": "user",
        "metadata": None,
        "content": [{"text": f"{body}\n\n{mark}", "type": "text"}],
        "options": None,
    }


_CAUGHT_UP = (MessageStarted, TextDelta, ModelRetrying, ToolCallOutput)


def _catch_up(chat: ChatView, interpreter: Interpreter) -> None:
    """Show the reply being streamed right now (from the session's event buffer), why it
    has not begun if the model is being asked again, and what the calls running now have
    printed so far."""
    run_id = interpreter.session.run_id
    for event in interpreter.events_since(0):
        if event.run_id == run_id and isinstance(event, _CAUGHT_UP):
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
    watch: Watch | None = None,
) -> AsyncGenerator[Updates, None]:
    """Run `action` and yield page updates until the session is idle again.

    `build` makes the starting view; it runs right after subscribing, so no event is seen
    twice or missed. Deltas are coalesced to one update per `interval_s`; structural events
    are shown at once (both paced more slowly in a long chat: `Coalescer.pace`). `first` is
    merged into the first update (e.g. the new session id). An `InvalidRequest` from the
    action propagates before anything is yielded. With a `watch`, the stream ends as soon as
    it is ended (its last yield then changes nothing), and renders again whenever it is
    woken.
    """
    subscription: Subscription = interpreter.subscribe()
    events = subscription.until_idle()
    reader: asyncio.Task[Event | None] | None = None
    woken: asyncio.Future[None] | None = None
    try:
        view = build()
        if action is not None:
            await action()
        running = interpreter.busy  # if so, an idle marker will end the subscription
        if not running:
            view.apply(subscription.pending())
        if watch is not None and watch.ended:
            return
        yield {**(first or {}), **view.updates(full=True)}
        if not running:
            return
        coalescer = Coalescer(interval_s)
        coalescer.pace(view.size)
        finished = False
        while not finished:
            redraw = False
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
                waiting: set[asyncio.Future[Any]] = {reader}
                if watch is not None:
                    woken = woken or asyncio.ensure_future(watch.woken())
                    waiting.add(woken)
                done, _ = await asyncio.wait(
                    waiting, timeout=coalescer.timeout(), return_when=asyncio.FIRST_COMPLETED
                )
                if woken is not None and woken in done:
                    woken, redraw = None, True
                if reader in done:
                    event = reader.result()
                    reader = None
                    if event is None:
                        finished = True
                    else:
                        coalescer.offer(event)
            if watch is not None and watch.ended:
                # Gradio ends a stream by repeating its last update: make that "no change",
                # or the view this stream showed would come back over the new one.
                yield no_change()
                return
            if not (finished or redraw or coalescer.due()):
                continue
            view.apply(coalescer.take())
            if finished:
                view.apply(subscription.pending())  # (anything said since the idle mark)
                view.refresh_memory(interpreter)
            update = view.updates()
            coalescer.pace(view.size)  # (the view changes only here)
            if update:
                yield update
    finally:
        for task in (reader, woken):
            if task is not None and not task.done():
                task.cancel()
                await asyncio.wait({task})
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
        subscription.close()
