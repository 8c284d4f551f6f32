"""Export a session to a JSON file, import one as a new session, replay one step by step.

An import says what it changed, in one notice (`import_notice`): what the file held that an
import never carries (tool permissions, AutoChat switched on), and what was repaired so any
model can continue the chat (`HistoryRepairs`). The HTTP API's import answer lists the same
as `reset` and `repairs`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime

import gradio as gr

from backends.gradio.coalesce import Coalescer
from backends.gradio.handlers import Handlers, owner_of, tab_of
from backends.gradio.stream import Updates, no_change
from backends.gradio.tabs import ticket_of
from backends.gradio.toasts import toast_text
from gui_agent.exceptions import InvalidRequest
from gui_agent.export import (
    MAX_IMPORT_BYTES,
    HistoryRepairs,
    Imported,
    encode_export,
    export_file_name,
    read_import,
    read_replay,
)
from gui_agent.import_words import import_summary
from gui_agent.log_text import loggable
from schema import Event, Message, MessageCompleted

__all__ = ["REPLAY_STEP_S", "Transfer", "complete_events", "import_notice"]

logger = logging.getLogger(__name__)

REPLAY_STEP_S = 0.25
"""The longest pause between two steps of a replay (recorded gaps are shortened to this)."""


class Transfer:
    """Export, import and replay handlers (they share the page's `Handlers`)."""

    def __init__(
        self,
        handlers: Handlers,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        step_s: float = REPLAY_STEP_S,
        max_import_bytes: int = MAX_IMPORT_BYTES,
    ) -> None:
        self.handlers = handlers
        self.sleep = sleep
        self.step_s = step_s
        self.max_import_bytes = max_import_bytes
        """The largest file an import or a replay reads; an export over it says so."""

    async def export(self, session_id: str, request: gr.Request) -> str:
        """The session and its recent events as JSON, for the browser to save as a file.
        One that could not be imported back is saved all the same, and the person is told
        why at once, in a notice that stays until closed."""
        interpreter = await self.handlers.lookup(session_id, request)
        if interpreter is None:
            gr.Warning("There is nothing to export yet.")
            return ""
        session = interpreter.session
        history = list(session.history)
        # Indented as the browser writes the file (download.js), so its size is the file's.
        encoded = await asyncio.to_thread(
            encode_export,
            session.to_record(interpreter.state),
            history,
            complete_events(interpreter.events_since(0), history),
            max_bytes=self.max_import_bytes,
            indent=2,
        )
        if encoded.problem is not None:
            logger.warning("export of session %s: %s", session.id, loggable(encoded.problem))
            gr.Warning(
                f"Exported, but this file cannot be imported back: {toast_text(encoded.problem)}. "
                "It holds the whole chat: keep it as a record.",
                duration=None,
                title="Export too large to import",
            )
        name = json.dumps(export_file_name(session.title, datetime.now(UTC)), ensure_ascii=False)
        return f'{{"filename": {name}, "document": {encoded.data.decode("utf-8")}}}'

    async def import_file(self, data: bytes | None, ticket: str, request: gr.Request) -> Updates:
        """Import an export as a new session of this user, and open it."""
        if not data:
            return no_change()
        owner = owner_of(request)
        try:
            imported = await asyncio.to_thread(
                read_import, data, owner=owner, max_bytes=self.max_import_bytes
            )
        except InvalidRequest as exc:
            gr.Warning(f"Could not import: {toast_text(exc)}")  # it may quote the file
            return no_change()
        record = imported.record
        # The user's other tabs hear of it from the manager's feed (follow.py).
        await self.handlers.manager.import_session(
            record, imported.messages, origin=tab_of(request)
        )
        changed = bool(imported.reset) or imported.repairs != HistoryRepairs()
        # A notice of what changed stays until closed: it may take a moment to read.
        gr.Info(import_notice(imported), duration=None if changed else 10, title="Imported")
        opened = await self.handlers.open_session(record.id, ticket, request)
        # The list shows every chat, the imported one among them: so does the search box.
        unfiltered = {self.handlers.page.search: ""}
        if self.handlers.page.session_id not in opened:  # a later event shows something else
            listed = await self.handlers.session_list_update(
                owner, "", tab=tab_of(request), searched=True
            )
            return {**unfiltered, **listed}
        listed = await self.handlers.session_list_update(
            owner, record.id, tab=tab_of(request), searched=True
        )
        return {**opened, **unfiltered, **listed}

    async def replay(
        self, data: bytes | None, ticket: str, request: gr.Request
    ) -> AsyncIterator[Updates]:
        """Show an export being re-rendered event by event (it does not become a session)."""
        if not data:
            yield no_change()
            return
        try:  # read as an import reads it, off the event loop (an export can be large)
            replay = await asyncio.to_thread(read_replay, data, max_bytes=self.max_import_bytes)
        except InvalidRequest as exc:
            gr.Warning(f"Could not replay: {toast_text(exc)}")
            yield no_change()
            return
        tab, order, owner = tab_of(request), ticket_of(ticket), owner_of(request)
        await self.handlers.streams.supersede(tab, order, "")
        with self.handlers.streams.watch(tab, "", order) as watch:
            # The tab shows no chat meanwhile: the boxes and the list say so, as for a new
            # chat (which a message sent after the replay starts). Left as they were, the
            # list kept the chat shown before chosen, and picking it again did nothing.
            blank = await self.handlers.no_chat(tab, owner)
            async for update in self._replay(replay.events, owner, lambda: watch.ended, blank):
                yield update
            if watch.ended:  # Gradio repeats a stream's last update as it ends: not this one
                yield no_change()

    async def _replay(
        self, events: Sequence[Event], owner: str, ended: Callable[[], bool], blank: Updates
    ) -> AsyncIterator[Updates]:
        """The replay's updates: first an empty view with `blank` (the rest of the page, as
        for a new chat), then the chat as each step of it changes it."""
        page = self.handlers.page
        view = self.handlers.blank_view(owner)
        if ended():
            return
        yield {**view.updates(full=True), **blank}
        coalescer = Coalescer(0.0)
        previous: Event | None = None
        for event in events:
            if not coalescer.offer(event):
                continue
            batch = coalescer.take()
            for item in batch:
                view.chat.apply(item)
            changed = view.updates()
            if page.chatbot in changed:
                if ended():  # the tab shows something else now
                    return
                yield {page.chatbot: changed[page.chatbot]}
                await self.sleep(self._pause(previous, batch[0]))
            previous = batch[-1]
        if coalescer.pending:
            for item in coalescer.take():
                view.chat.apply(item)
        view.chat.note("_End of the replay. Send a message to start a new chat._")
        if not ended():
            yield {page.chatbot: view.chat.messages()}

    def _pause(self, previous: Event | None, current: Event) -> float:
        if previous is None:
            return 0.0
        gap = (current.at - previous.at).total_seconds()
        return min(max(gap, 0.0), self.step_s) or self.step_s / 5


def complete_events(events: Sequence[Event], history: Sequence[Message]) -> list[Event]:
    """The recorded events if they tell the whole history, else none (a replay then
    re-creates the steps from the messages). The session's buffer holds only its recent
    events, and none from before a restart."""
    completed = {e.message.id for e in events if isinstance(e, MessageCompleted)}
    if not events or any(message.id not in completed for message in history):
        return []
    return list(events)


def import_notice(imported: Imported) -> str:
    """What an import did, in plain words (`gui_agent.import_words`)."""
    return import_summary(len(imported.messages), imported.reset, imported.repairs)
