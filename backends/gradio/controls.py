"""The quick controls of the chat a tab shows: stop, the answer to an approval, asking again
before the tools allowed for the session, the last message back in the box to edit, clear
(with a confirmation), and the images attached for the next message (a mixin of
`Handlers`: handler_base.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence

import gradio as gr

from backends.gradio.attach import read_upload
from backends.gradio.follow import as_published
from backends.gradio.handler_base import HandlerBase
from backends.gradio.image_upload import UploadedFile
from backends.gradio.owners import tab_of
from backends.gradio.panels import allowed_markdown, badge_html, tools_markdown
from backends.gradio.stream import Updates, no_change
from backends.gradio.tabs import ticket_of
from backends.gradio.toasts import toast_text
from backends.gradio.tray_preview import taken_back
from gui_agent.exceptions import InvalidRequest
from gui_agent.session import written_by_person
from gui_agent.tools.permissions import with_mode
from gui_agent.wording import tool_mode_words
from schema import ApprovalDecision, PermissionMode

__all__ = ["NOTE_FIRST", "QuickControls"]

NOTE_FIRST = "Enter denies with your note: write why first, or use the buttons."


class QuickControls(HandlerBase):
    """The handlers of the buttons that act at once on the tab's chat or its message."""

    async def stop(self, session_id: str, request: gr.Request) -> Updates:
        interpreter = await self.lookup(session_id, request)
        if interpreter is None:
            return no_change()
        await interpreter.stop()
        stoppable = interpreter.busy or interpreter.autochat_active
        return {self.page.badge: badge_html(interpreter.state, stoppable=stoppable)}

    async def forget_allowed(self, session_id: str, request: gr.Request) -> Updates:
        """Every tool allowed for this session asks again before it runs."""
        interpreter = await self.lookup(session_id, request)
        if interpreter is None:
            return no_change()
        if interpreter.allowed_tools:
            interpreter.forget_allowed_tools()
            gr.Info("Every tool that changes things asks you again before it runs.")
        return {
            self.page.allowed_panel: allowed_markdown(interpreter.allowed_tools),
            self.page.tools_panel: tools_markdown(interpreter.tool_standings()),
        }

    async def show_tool_mode(
        self, session_id: str, tool: str | None, ticket: str, request: gr.Request
    ) -> Updates:
        """The mode set in this chat for the tool just picked ("": the app's own); in a new
        chat, the one set for it before its first message (new_chat_modes.py). Answered
        after the tab opened another chat (or a new one), which emptied the picker and the
        mode, the page is left as it is: that mode was the other chat's."""
        if self.streams.overtaken(tab_of(request), ticket_of(ticket)):
            return no_change()
        interpreter = await self.lookup(session_id, request, quiet=True)
        modes: Mapping[str, PermissionMode]
        if interpreter is not None:
            modes = interpreter.session.settings.permissions
        else:
            modes = self.new_modes.of(tab_of(request)) if not session_id else {}
        chosen = modes.get(tool) if tool else None
        return {self.page.tool_mode: "" if chosen is None else chosen.value}

    async def set_tool_mode(
        self, session_id: str, tool: str | None, mode: str | None, request: gr.Request
    ) -> Updates:
        """Set what a call of the picked tool does in this chat, at once. A new chat (not
        made yet: its first message makes it) is made with it (new_chat_modes.py)."""
        tab = tab_of(request)
        if not tool:
            gr.Warning("Pick a tool first.")
            return {self.page.tool_mode: None}
        chosen = PermissionMode(mode) if mode else None
        if not session_id:
            # A first message on its way makes the chat the tab shows: the mode is its.
            await self.streams.opened(tab)
            session_id = self.streams.shown(tab) or ""
            if not session_id:
                return self._set_new_chat_mode(tab, tool, chosen)
        interpreter = await self.lookup(session_id, request)
        if interpreter is None:  # (deleted meanwhile: the lookup said so)
            return {self.page.tool_mode: None}
        settings = interpreter.session.settings
        modes = with_mode(settings.permissions, tool, chosen)
        # This tab shows the change already: its own event is no news to it (follow.py).
        changed = settings.model_copy(update={"permissions": modes})
        self.news.saving(tab, interpreter.id, {"settings": as_published(changed)})
        try:
            standing = await interpreter.set_tool_mode(tool, chosen)
        except InvalidRequest as exc:
            gr.Warning(toast_text(exc))
            return {self.page.tool_mode: None}
        words = tool_mode_words(standing.mode, standing.chosen, standing.allowed_for_session)
        gr.Info(f"{tool}: {words}.")
        return {
            self.page.tools_panel: tools_markdown(interpreter.tool_standings()),
            self.page.allowed_panel: allowed_markdown(interpreter.allowed_tools),
            # (as set: a `show_tool_mode` of the pick just before may have answered after
            # the click, with the mode the tool had then)
            self.page.tool_mode: "" if chosen is None else chosen.value,
        }

    def _set_new_chat_mode(self, tab: str, tool: str, chosen: PermissionMode | None) -> Updates:
        """`set_tool_mode` in the tab's new chat: kept for the chat its first message makes."""
        names = [standing.name for standing in self.new_chat_tools]
        if tool not in names:
            gr.Warning(f"This chat has no tool {tool!r}; its tools: {', '.join(names) or 'none'}.")
            return {self.page.tool_mode: None}
        self.new_modes.set(tab, tool, chosen)
        tools = self.new_chat_tool_standings(tab)
        standing = next(t for t in tools if t.name == tool)
        words = tool_mode_words(standing.mode, standing.chosen, standing.allowed_for_session)
        gr.Info(f"{tool}: {words}.")
        return {
            self.page.tools_panel: tools_markdown(tools),
            self.page.allowed_panel: allowed_markdown(()),
            self.page.tool_mode: "" if chosen is None else chosen.value,
        }

    def approver(
        self, decision: ApprovalDecision, *, needs_note: bool = False
    ) -> Callable[[str, str, str, gr.Request], Awaitable[Updates]]:
        """Answer the open approval with `decision` and the note. `needs_note`: only with a
        note (Enter in the note box denies with it; an empty box decides nothing)."""

        async def answer(
            session_id: str, approval_id: str, note: str, request: gr.Request
        ) -> Updates:
            interpreter = await self.lookup(session_id, request)
            if interpreter is None or not approval_id:
                return no_change()
            if needs_note and not (note or "").strip():
                gr.Info(NOTE_FIRST)
                return no_change()
            if not interpreter.approve(approval_id, decision, (note or "").strip() or None):
                gr.Warning("That request was already answered or has expired.")
            # The panel itself is the session stream's alone to change (page.js hides it at
            # the click): hidden here, it could hide the next approval of the same reply,
            # which the stream may have shown before this answer reaches the page, and which
            # the stream would not send again.
            return {self.page.approval_note: ""}

        return answer

    async def edit_last(self, session_id: str, request: gr.Request) -> Updates:
        """The person's last message back in the box, to send as its edit; its images go
        back in the tray with it (the edit replaces the whole message: without them, it
        would lose its pictures unless they were attached again)."""
        interpreter = await self.lookup(session_id, request)
        history = interpreter.session.history if interpreter else []
        for message in reversed(history):
            if written_by_person(message) and interpreter is not None:
                tab = tab_of(request)
                self.edits.begin(tab, interpreter.id, message.id)  # (the edit names it)
                self.trays.restore(tab, message.images)
                return {
                    self.page.chat_input: message.content,
                    self.page.edit_mode: True,
                    **self._tray(request),
                }
        gr.Warning("There is no message of yours to edit.")
        return no_change()

    def ask_clear(self, session_id: str) -> Updates:
        if not session_id:
            gr.Warning("There is nothing to clear yet.")
            return no_change()
        return {self.page.confirm_clear_row: gr.update(visible=True)}

    def cancel_clear(self) -> Updates:
        return {self.page.confirm_clear_row: gr.update(visible=False)}

    async def clear(self, session_id: str, request: gr.Request) -> Updates:
        hide = {self.page.confirm_clear_row: gr.update(visible=False)}
        interpreter = await self.lookup(session_id, request)
        if interpreter is None:
            return hide
        try:
            await interpreter.clear()
        except InvalidRequest as exc:
            gr.Warning(toast_text(exc))
            return hide
        return {**self.view_of(interpreter).updates(full=True), **hide}

    async def attach(
        self, files: Sequence[bytes | UploadedFile] | None, request: gr.Request
    ) -> Updates:
        """Keep the uploaded images for the tab's next message; refuse what is not an image.
        The upload button hands over each file's path and name (read in a thread:
        image_upload.py); bytes are taken as they are (a file with no name)."""
        uploads = [
            file
            if isinstance(file, bytes)
            else await asyncio.to_thread(read_upload, file.path, file.name)
            for file in files or []
        ]
        _count, problems = self.trays.add(tab_of(request), uploads)
        for problem in problems:
            gr.Warning(f"Not attached: {problem}.")
        return self._tray(request)

    async def detach(self, request: gr.Request) -> Updates:
        """The person took the images back."""
        self.trays.take(tab_of(request))
        return self._tray(request)

    async def take_back(self, event: gr.EventData, request: gr.Request) -> Updates:
        """The person took one image back (its button in the preview: tray_preview.py)."""
        key = taken_back(event)
        if key is not None:
            self.trays.remove(tab_of(request), key)
        return self._tray(request)

    async def hide_tray(self) -> Updates:
        """A send went out with the images (the send itself takes them from the tray)."""
        return self._tray(None, empty=True)
