"""What the page's controls do. One `Handlers` per app; no state of its own beyond its
collaborators: every call finds its session through `manager.get(session_id, owner)`.

The owner of a session is the logged-in user (`request.username`), or "local" without
login. A tab's only state is the session id (a `gr.State`); an empty id means "new chat",
and the session is created by the first message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from datetime import UTC
from typing import Any, Protocol

import gradio as gr

from backends.gradio.attach import Trays, attachments_note
from backends.gradio.coalesce import DEFAULT_INTERVAL_S
from backends.gradio.form import Form
from backends.gradio.layout import Page
from backends.gradio.markdown import escape_html
from backends.gradio.panels import PanelState, badge_html
from backends.gradio.renderer import ChatView
from backends.gradio.stream import PageView, Updates, no_change, stream_session
from gui_agent.exceptions import InvalidRequest
from gui_agent.interpreter import Interpreter
from gui_agent.manager import SessionManager, SessionNotFound
from gui_agent.session import written_by_person
from schema import (
    MAX_MESSAGE_CHARS,
    AgentName,
    ApprovalDecision,
    AutoChatSettings,
    SessionRecord,
    SessionSettings,
)

__all__ = ["Handlers", "ModelInfoLike", "owner_of"]

logger = logging.getLogger(__name__)

LOCAL_OWNER = "local"
KEEP_OPEN_S = 15.0


class ModelInfoLike(Protocol):
    """A configured model as the model picker lists it (connectors.registry.ModelInfo)."""

    @property
    def name(self) -> str: ...
    @property
    def is_default(self) -> bool: ...
    @property
    def note(self) -> str: ...


def owner_of(request: gr.Request | None) -> str:
    """The logged-in user, or "local" when the app runs without login."""
    username = getattr(request, "username", None) if request is not None else None
    return username if isinstance(username, str) and username else LOCAL_OWNER


def _tab(request: gr.Request | None) -> str:
    """A key for the browser tab (and its user) a request comes from."""
    session_hash = getattr(request, "session_hash", None) if request is not None else None
    return f"{owner_of(request)}\0{session_hash or ''}"


class Handlers:
    """The callbacks of one page layout, bound to a session manager."""

    def __init__(
        self,
        manager: SessionManager,
        page: Page,
        *,
        icons: Mapping[str, str],
        languages: Collection[str | None],
        models: Sequence[ModelInfoLike],
        interval_s: float = DEFAULT_INTERVAL_S,
    ) -> None:
        self.manager = manager
        self.page = page
        self.icons = icons
        self.languages = languages
        self.notes = {model.name: model.note for model in models}
        self.interval_s = interval_s
        self.trays = Trays()
        self.role_notes = {
            name.value: role.description for name, role in manager.architectures_factory().items()
        }

    # -- lookups ----------------------------------------------------------------------------

    async def lookup(self, session_id: str, request: gr.Request | None) -> Interpreter | None:
        """The tab's session, or None for a new chat (or one deleted meanwhile)."""
        if not session_id:
            return None
        try:
            return await self.manager.get(session_id, owner_of(request))
        except SessionNotFound:
            gr.Warning("This chat no longer exists; starting a new one.")
            return None

    def view_of(self, interpreter: Interpreter) -> PageView:
        return PageView.of(self.page, interpreter, icons=self.icons, languages=self.languages)

    def blank_view(self) -> PageView:
        return PageView(self.page, ChatView(icons=self.icons), PanelState())

    async def session_choices(self, owner: str, query: str | None = None) -> list[tuple[str, str]]:
        records = await self.manager.list(owner, query=query or None)
        return [(_label(record), record.id) for record in records]

    async def session_list_update(self, owner: str, current: str, query: str = "") -> Updates:
        choices = await self.session_choices(owner, query)
        ids = {value for _label_, value in choices}
        return {
            self.page.session_list: gr.update(
                choices=choices, value=current if current in ids else None
            )
        }

    def settings_values(self, interpreter: Interpreter | None) -> Updates:
        """The settings widgets showing a session's settings (or the defaults)."""
        page = self.page
        if interpreter is None:
            settings, auto, agent, title = SessionSettings(), AutoChatSettings(), None, ""
        else:
            session = interpreter.session
            settings, auto, agent, title = (
                session.settings,
                session.autochat,
                session.agent,
                session.title,
            )
        model = settings.model or self.manager.models.default
        values: Updates = {
            page.model_picker: model,
            page.model_note: escape_html(self.notes.get(model, "")),
            page.system_prompt: settings.system_prompt,
            page.temperature: settings.temperature if settings.temperature is not None else 1.0,
            page.autochat_toggle: auto.enabled,
            page.max_turns: auto.max_turns,
            page.delay: auto.delay_s,
            page.token_budget: auto.token_budget or 0,
            page.time_budget: auto.time_budget_s or 0,
            page.rename_box: title,
            page.edit_mode: False,
            page.confirm_row: gr.update(visible=False),
        }
        if agent is not None:
            values[page.role_picker] = agent.value
        return values

    # -- page load, new chat, open, rename, delete, search -----------------------------------

    async def on_load(self, request: gr.Request) -> Updates:
        return await self.session_list_update(owner_of(request), "")

    async def keep_open(self) -> AsyncIterator[None]:
        """Holds the tab's event stream open for as long as the tab is.

        Gradio's browser client opens its server-sent-event stream when an event starts and
        lets it close when none is left; an event sent while the stream is closing loses
        its reply, and the button that sent it stays busy. With this event always pending
        the stream never closes. It wakes every `KEEP_OPEN_S` so that Gradio notices a
        closed tab and ends it (a handler that never yields would hold its queue slot).
        """
        while True:
            yield None
            await asyncio.sleep(KEEP_OPEN_S)

    async def new_chat(self, request: gr.Request) -> Updates:
        view = self.blank_view()
        return {
            self.page.session_id: "",
            self.page.chat_input: "",
            **view.updates(full=True),
            **self.settings_values(None),
            **await self.session_list_update(owner_of(request), ""),
        }

    async def open_session(self, selected: str | None, request: gr.Request) -> Updates:
        interpreter = await self.lookup(selected or "", request)
        if interpreter is None:
            return await self.new_chat(request)
        return {
            self.page.session_id: interpreter.id,
            **self.view_of(interpreter).updates(full=True),
            **self.settings_values(interpreter),
        }

    async def follow(self, session_id: str, request: gr.Request) -> AsyncIterator[Updates]:
        """Keep showing a session that is busy (opened mid-turn, or AutoChat running)."""
        interpreter = await self.lookup(session_id, request)
        if interpreter is None or not interpreter.busy:
            yield no_change()
            return
        async for update in stream_session(
            interpreter, lambda: self.view_of(interpreter), interval_s=self.interval_s
        ):
            yield update

    async def search(self, query: str, session_id: str, request: gr.Request) -> Updates:
        return await self.session_list_update(owner_of(request), session_id, query)

    async def refresh_list(self, session_id: str, query: str, request: gr.Request) -> Updates:
        """The session list after a turn (new chat saved, title set, order changed)."""
        return await self.session_list_update(owner_of(request), session_id, query)

    async def rename(self, session_id: str, title: str, query: str, request: gr.Request) -> Updates:
        if not session_id:
            gr.Warning("Send a message first: a new chat is saved with its first message.")
            return no_change()
        if not title.strip():
            gr.Warning("A title cannot be empty.")
            return no_change()
        owner = owner_of(request)
        try:
            await self.manager.rename(session_id, title, owner)
        except SessionNotFound:
            gr.Warning("This chat no longer exists.")
            return no_change()
        gr.Info("Chat renamed.")
        return await self.session_list_update(owner, session_id, query)

    def ask_delete(self, session_id: str) -> Updates:
        if not session_id:
            gr.Warning("There is nothing to delete yet.")
            return no_change()
        return {self.page.confirm_row: gr.update(visible=True)}

    def cancel_delete(self) -> Updates:
        return {self.page.confirm_row: gr.update(visible=False)}

    async def delete(self, session_id: str, request: gr.Request) -> Updates:
        if session_id:
            with contextlib.suppress(SessionNotFound):
                await self.manager.delete(session_id, owner_of(request))
            gr.Info("Chat deleted.")
        return await self.new_chat(request)

    # -- quick controls ---------------------------------------------------------------------

    async def stop(self, session_id: str, request: gr.Request) -> Updates:
        interpreter = await self.lookup(session_id, request)
        if interpreter is None:
            return no_change()
        await interpreter.stop()
        return {self.page.badge: badge_html(interpreter.state)}

    def approver(
        self, decision: ApprovalDecision
    ) -> Callable[[str, str, str, gr.Request], Awaitable[Updates]]:
        async def answer(
            session_id: str, approval_id: str, note: str, request: gr.Request
        ) -> Updates:
            interpreter = await self.lookup(session_id, request)
            if interpreter is None or not approval_id:
                return no_change()
            if not interpreter.approve(approval_id, decision, (note or "").strip() or None):
                gr.Warning("That request was already answered or has expired.")
            return {
                self.page.approval_title: "",  # hides the panel (page.js)
                self.page.approval_code: "",
                self.page.approval_id: "",
                self.page.approval_note: "",
            }

        return answer

    async def pick_role(self, session_id: str, role: str, request: gr.Request) -> Updates:
        interpreter = await self.lookup(session_id, request)
        if interpreter is None or role not in AgentName.__members__:
            return no_change()
        if interpreter.session.agent is AgentName(role):
            return no_change()  # already so (the dropdown reports one pick more than once)
        subscription = interpreter.subscribe()
        try:
            view = self.view_of(interpreter)
            await interpreter.set_agent(AgentName(role))
            if interpreter.busy:
                return no_change()  # the running stream shows the switch
            view.apply(subscription.pending())
            return {self.page.chatbot: view.chat.messages()}
        except InvalidRequest as exc:
            gr.Warning(str(exc))
            return {self.page.role_picker: interpreter.session.agent.value}
        finally:
            subscription.close()

    async def describe_role(self, role: str) -> str:
        """What the picked role does, under the picker."""
        return escape_html(self.role_notes.get(role, ""))

    async def pick_model(self, session_id: str, model: str, request: gr.Request) -> Updates:
        note = {self.page.model_note: escape_html(self.notes.get(model, ""))}
        interpreter = await self.lookup(session_id, request)
        if interpreter is None:
            return note
        try:
            await self.manager.set_model(interpreter, model)
        except InvalidRequest as exc:
            gr.Warning(str(exc))
            return {self.page.model_picker: interpreter.session.settings.model}
        return note

    async def change_settings(self, data: dict[Any, Any], request: gr.Request) -> None:
        form = Form.read(self.page, data)
        interpreter = await self.lookup(form.session_id, request)
        if interpreter is None:
            return  # a new chat takes the form's values when it is created
        try:
            settings = form.session_settings(interpreter.session.settings)
        except InvalidRequest as exc:
            gr.Warning(f"Settings not saved: {exc}")
            return
        if settings != interpreter.session.settings:
            await interpreter.update(settings=settings)

    async def change_autochat_limits(self, data: dict[Any, Any], request: gr.Request) -> None:
        form = Form.read(self.page, data)
        interpreter = await self.lookup(form.session_id, request)
        if interpreter is None:
            return
        try:
            auto = form.autochat_settings(enabled=interpreter.session.autochat.enabled)
        except InvalidRequest as exc:
            gr.Warning(str(exc))
            return
        if auto != interpreter.session.autochat:
            await interpreter.update(autochat=auto)

    async def edit_last(self, session_id: str, request: gr.Request) -> Updates:
        interpreter = await self.lookup(session_id, request)
        history = interpreter.session.history if interpreter else []
        for message in reversed(history):
            if written_by_person(message):
                return {self.page.chat_input: message.content, self.page.edit_mode: True}
        gr.Warning("There is no message of yours to edit.")
        return no_change()

    async def clear(self, session_id: str, request: gr.Request) -> Updates:
        interpreter = await self.lookup(session_id, request)
        if interpreter is None:
            return no_change()
        try:
            await interpreter.clear()
        except InvalidRequest as exc:
            gr.Warning(str(exc))
            return no_change()
        return self.view_of(interpreter).updates(full=True)

    # -- streaming: send, retry, AutoChat ------------------------------------------------------

    async def send(self, data: dict[Any, Any], request: gr.Request) -> AsyncIterator[Updates]:
        """Send the message (or the edit of the last one) with the attached images, and
        stream the reply. The images leave the tray with this send, sent or refused (as the
        text leaves the input box)."""
        form = Form.read(self.page, data)
        text, images = form.text, self.trays.take(_tab(request))
        if not text.strip() and not images:
            yield no_change()  # nothing sent, nothing changes
            return
        if len(text) > MAX_MESSAGE_CHARS:
            gr.Warning(
                f"Your message has {len(text):,} characters; the limit is "
                f"{MAX_MESSAGE_CHARS:,}. Please shorten it."
            )
            yield no_change()
            return
        interpreter = await self.lookup(form.session_id, request)
        first: Updates = {}
        if interpreter is None:
            try:
                interpreter = await self._create(form, request)
            except InvalidRequest as exc:
                gr.Warning(str(exc))
                yield no_change()
                return
            first[self.page.session_id] = interpreter.id
        elif interpreter.busy and not form.as_edit:
            await interpreter.send(text, images=images)  # queued; the running stream shows it
            gr.Info("Queued: the agent reads it when the current step ends.")
            yield no_change()
            return
        target = interpreter

        async def act() -> None:
            if form.as_edit:
                await target.edit_last(text, images=images)
            else:
                await target.send(text, images=images)

        async for update in self._stream(target, act, first, request):
            yield update

    async def attach(self, files: list[bytes] | None, request: gr.Request) -> Updates:
        """Keep the uploaded images for the tab's next message; refuse what is not an image."""
        count, problems = self.trays.add(_tab(request), files or [])
        for problem in problems:
            gr.Warning(f"Not attached: {problem}.")
        return self._tray(count)

    async def detach(self, request: gr.Request) -> Updates:
        """The person took the images back."""
        self.trays.take(_tab(request))
        return self._tray(0)

    async def hide_tray(self) -> Updates:
        """A send went out with the images (the send itself takes them from the tray)."""
        return self._tray(0)

    def _tray(self, count: int) -> Updates:
        page = self.page
        return {
            page.attach_note: attachments_note(count),
            page.detach_btn: gr.update(visible=bool(count)),
        }

    async def retry(self, session_id: str, request: gr.Request) -> AsyncIterator[Updates]:
        interpreter = await self.lookup(session_id, request)
        if interpreter is None:
            gr.Warning("There is nothing to retry yet.")
            yield no_change()
            return
        async for update in self._stream(interpreter, interpreter.retry, None, request):
            yield update

    async def toggle_autochat(
        self, data: dict[Any, Any], request: gr.Request
    ) -> AsyncIterator[Updates]:
        """Switch AutoChat on (it starts at once when idle after a turn) or off (it stops
        after the current turn)."""
        form = Form.read(self.page, data)
        try:
            auto = form.autochat_settings()
        except InvalidRequest as exc:
            gr.Warning(str(exc))
            yield no_change()
            return
        interpreter = await self.lookup(form.session_id, request)
        if interpreter is None:
            text = (
                "AutoChat is on: it starts with your first message."
                if auto.enabled
                else ("AutoChat is off.")
            )
            yield {self.page.autochat_status: text}
            return
        if interpreter.busy:
            await interpreter.update(autochat=auto)
            yield no_change()  # the running stream shows the effect
            return
        target = interpreter

        async def act() -> None:
            await target.update(autochat=auto)

        async for update in self._stream(target, act, None, request):
            yield update

    async def _create(self, form: Form, request: gr.Request) -> Interpreter:
        settings = form.session_settings(SessionSettings())
        agent = AgentName(form.role) if form.role in AgentName.__members__ else None
        interpreter = await self.manager.create(
            owner_of(request), agent=agent, model=form.model or None, settings=settings
        )
        auto = form.autochat_settings()
        if auto != interpreter.session.autochat:
            await interpreter.update(autochat=auto)
        return interpreter

    async def _stream(
        self,
        interpreter: Interpreter,
        action: Callable[[], Awaitable[object]],
        first: Updates | None,
        request: gr.Request,
    ) -> AsyncIterator[Updates]:
        stream = stream_session(
            interpreter,
            lambda: self.view_of(interpreter),
            action=action,
            first=first,
            interval_s=self.interval_s,
        )
        yielded = False
        try:
            async for update in stream:
                yielded = True
                yield update
        except InvalidRequest as exc:
            gr.Warning(str(exc))
        finally:
            await stream.aclose()
        if not yielded:
            yield no_change()  # a streaming handler must yield once, or Gradio blanks its outputs


def _label(record: SessionRecord) -> str:
    when = record.updated_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
    return f"{record.title or 'Untitled chat'} · {when}"
