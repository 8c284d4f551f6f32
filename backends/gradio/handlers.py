"""What the page's controls do. One `Handlers` per app; no state of its own beyond its
collaborators: every call finds its session through `manager.get(session_id, owner)`.

The owner of a session is the logged-in user (`request.username`), or "local" without
login. A tab's only state is the session id (a hidden textbox, so the browser can remember
it across a reload); an empty id means "new chat", and the session is created by the first
message; what its settings boxes last got from the server is kept in the page too
(bases.py). What runs per tab on the server is its streams (`TabStreams`, by Gradio
session): an event that replaces the tab's view ends them first, so no late update of the
old chat can land over the new one. What a tab has to catch up on of changes made
elsewhere is its news (`TabNews`, follow.py), gone when its keep-alive ends; the side
panel's settings are saved by `SidePanel`.
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
from backends.gradio.bases import Base, edited, in_step
from backends.gradio.coalesce import DEFAULT_INTERVAL_S
from backends.gradio.follow import TabNews, as_published
from backends.gradio.form import Form, based_fields
from backends.gradio.layout import Page, setting_text
from backends.gradio.markdown import escape_html
from backends.gradio.panels import PanelState, badge_html
from backends.gradio.renderer import ChatView
from backends.gradio.saves import LIMITS, SETTINGS, save_form
from backends.gradio.stream import PageView, Updates, no_change, stream_session
from backends.gradio.tabs import TabStreams, ticket_of
from backends.gradio.unsent import Unsent
from gui_agent.exceptions import InvalidRequest
from gui_agent.interpreter import Interpreter
from gui_agent.manager import SessionManager, SessionNotFound
from gui_agent.session import written_by_person
from schema import (
    MAX_MESSAGE_CHARS,
    AgentName,
    ApprovalDecision,
    AutoChatSettings,
    ImagePart,
    SessionRecord,
    SessionSettings,
)

__all__ = ["Handlers", "ModelInfoLike", "owner_of", "tab_of"]

logger = logging.getLogger(__name__)

LOCAL_OWNER = "local"
LISTED_CHATS = 200
"""The chats list shows this many, the most recent first; past that it says to search."""
QUEUED_NOTE = "Queued: the agent reads it when the current step ends."
SENT_WITH_DEFAULTS = (
    "{problem}. Your message was sent; the new chat keeps that setting's default until you fix it."
)
NOT_SAVED = "{problem}. Not saved: AutoChat keeps that limit as it was until you fix it."
NOTE_FIRST = "Enter denies with your note: write why first, or use the buttons."
NOTHING_TO_EDIT = (
    "This chat has no message of yours to edit yet: untick “Send as an edit of my last "
    "message” to send it as a new message. Your text is back in the box."
)
SENT_WITH_PREVIOUS = "{problem}. Your message was sent; AutoChat keeps that limit as it was."
RAN_WITH_PREVIOUS_SETTINGS = (
    "{problem}. The turn runs with that setting as it was until you fix it."
)
SENT_WITH_PREVIOUS_SETTINGS = (
    "{problem}. Your message was sent; the chat keeps that setting as it was until you fix it."
)


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


def tab_of(request: gr.Request | None) -> str:
    """A key for the browser tab (and its user) a request comes from."""
    session_hash = getattr(request, "session_hash", None) if request is not None else None
    return f"{owner_of(request)}\0{session_hash or ''}"


def shown_fields(page: Page, values: Updates) -> dict[str, object]:
    """Of `settings_values`, what each field the tab's base keeps shows, by field."""
    return {name: values[box] for name, box in based_fields(page).items()}


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
        closing: asyncio.Event | None = None,
    ) -> None:
        self.manager = manager
        self.page = page
        self.icons = icons
        self.languages = languages
        self.notes = {model.name: model.note for model in models}
        self.interval_s = interval_s
        self.trays = Trays()
        self.unsent = Unsent()
        """Messages refused after the browser emptied the input box (`give_back`)."""
        self.streams = TabStreams()
        self.news = TabNews()
        """What each tab has to catch up on of changes made elsewhere (follow.py)."""
        self.closing = closing if closing is not None else asyncio.Event()
        """Set when the server shuts down: every tab's keep-alive event ends (presence.py)."""
        self.role_notes = {
            name.value: role.description for name, role in manager.architectures_factory().items()
        }

    # -- lookups ----------------------------------------------------------------------------

    async def lookup(
        self, session_id: str, request: gr.Request | None, *, quiet: bool = False
    ) -> Interpreter | None:
        """The tab's session, or None for a new chat (or one deleted meanwhile)."""
        if not session_id:
            return None
        try:
            return await self.manager.get(session_id, owner_of(request))
        except SessionNotFound:
            if not quiet:
                gr.Warning("This chat no longer exists; starting a new one.")
            return None

    def view_of(self, interpreter: Interpreter) -> PageView:
        return PageView.of(self.page, interpreter, icons=self.icons, languages=self.languages)

    def blank_view(self) -> PageView:
        return PageView(self.page, ChatView(icons=self.icons), PanelState())

    async def session_choices(self, owner: str, query: str | None = None) -> list[tuple[str, str]]:
        """The owner's chats whose title holds `query` (spaces around it do not count)."""
        records = await self.manager.list(
            owner, query=(query or "").strip() or None, limit=LISTED_CHATS
        )
        return [(_label(record), record.id) for record in records]

    async def session_list_update(self, owner: str, current: str, query: str = "") -> Updates:
        choices = await self.session_choices(owner, query)
        ids = {value for _label_, value in choices}
        if len(choices) >= LISTED_CHATS:  # there may be more: say how to reach them
            kind = "matching chats" if query.strip() else "chats"
            info = f"Your {LISTED_CHATS} most recent {kind}: search to find others."
        elif choices or not query.strip():
            info = ""  # (None would leave an earlier "no chats match" in place)
        else:
            info = f"No chats match “{escape_html(query.strip()[:80])}”."
        return {
            self.page.session_list: gr.update(
                choices=choices, value=current if current in ids else None, info=info
            )
        }

    def settings_values(self, interpreter: Interpreter | None) -> Updates:
        """The settings widgets showing a session's settings (or the defaults), and what
        they show as the tab's base (bases.py)."""
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
            **{
                box: setting_text(getattr(settings, name))
                for name, box in page.advanced_settings().items()
            },
            page.settings_note: "",
            page.autochat_toggle: auto.enabled,
            page.max_turns: auto.max_turns,
            page.delay: auto.delay_s,
            page.token_budget: auto.token_budget or 0,
            page.time_budget: auto.time_budget_s or 0,
            page.rename_box: title,
            page.edit_mode: False,
            page.confirm_row: gr.update(visible=False),
            page.confirm_clear_row: gr.update(visible=False),
            page.limits_note: "",
        }
        if agent is not None:
            values[page.role_picker] = agent.value
        session_id = interpreter.id if interpreter is not None else ""
        values[page.form_base] = Base(session_id, shown_fields(page, values)).encode()
        return values

    def shows(self, interpreter: Interpreter, values: Updates | None = None) -> dict[str, object]:
        """The chat's settings, AutoChat limits and title as their boxes show them, by field
        (what the tab's base keeps: bases.py). `values`: its `settings_values`, if at hand."""
        if values is None:
            values = self.settings_values(interpreter)
        return shown_fields(self.page, values)

    def base_after(self, interpreter: Interpreter, form: Form) -> Updates:
        """The tab's base after a save (or a chat made from the form): the boxes that show
        the chat's value now are in step with it (bases.py)."""
        synced = in_step(form.boxes(), self.shows(interpreter))
        base = (form.base or Base(interpreter.id)).with_values(interpreter.id, synced)
        return {self.page.form_base: base.encode()}

    # -- page load, new chat, open ----------------------------------------------------------

    async def on_load(self, remembered: str, ticket: str, request: gr.Request) -> Updates:
        """The page opens on the chat this browser showed last (a reload, a server restart),
        else on a new chat; with login, it says who is signed in."""
        owner, tab, order = owner_of(request), tab_of(request), ticket_of(ticket)
        interpreter = await self.lookup(remembered or "", request, quiet=True)
        await self.streams.supersede(tab, order, interpreter.id if interpreter else "")
        # A new chat is what the page shows already: leave it (and a message sent at once).
        opened: Updates = {}
        if interpreter is not None and not self.streams.overtaken(tab, order):
            opened = {
                **self.view_of(interpreter).updates(full=True),
                **self.settings_values(interpreter),
            }
        current = interpreter.id if opened and interpreter is not None else ""
        return {
            **opened,
            **await self.session_list_update(owner, current),
            self.page.account: _account_note(request),
        }

    async def new_chat(self, ticket: str, request: gr.Request) -> Updates:
        tab, order = tab_of(request), ticket_of(ticket)
        await self.streams.supersede(tab, order, "")
        view = self.blank_view()
        if self.streams.overtaken(tab, order):
            return no_change()
        return {
            self.page.session_id: "",
            self.page.chat_input: "",
            **view.updates(full=True),
            **self.settings_values(None),
            # The list shows every chat again: so does the search box (not a stale query).
            self.page.search: "",
            **await self.session_list_update(owner_of(request), ""),
        }

    async def open_session(self, selected: str | None, ticket: str, request: gr.Request) -> Updates:
        tab, order = tab_of(request), ticket_of(ticket)
        await self.streams.supersede(tab, order, selected or "")
        interpreter = await self.lookup(selected or "", request)
        if interpreter is None:
            return await self.new_chat(ticket, request)
        if self.streams.overtaken(tab, order):
            return no_change()
        return {
            self.page.session_id: interpreter.id,
            **self.view_of(interpreter).updates(full=True),
            **self.settings_values(interpreter),
        }

    async def settle(
        self, session_id: str, ticket: str, request: gr.Request
    ) -> AsyncIterator[Updates]:
        """Show in full what the tab shows now, as the server knows it (the tab's latest
        view-changing event), and keep showing it while it is busy (opened mid-turn, or
        AutoChat running).

        Runs after every event that replaces the view. Gradio's browser applies each
        event's updates in a loop of its own, so an update a replaced stream sent just
        before the change can still be applied after the new view; this one comes later
        and puts the view right. Its `session_id` input is what the browser said, which
        such a late update may have changed too: it counts only if the server knows
        nothing of the tab (API clients)."""
        tab, order = tab_of(request), ticket_of(ticket)
        await self.streams.opened(tab)  # a first message sent meanwhile shows its new chat
        shown = self.streams.shown(tab)
        target = session_id if shown is None else shown
        interpreter = await self.lookup(target, request, quiet=True)
        if self.streams.overtaken(tab, order) or (interpreter is None and shown is None):
            yield no_change()
        elif interpreter is None:
            yield self.blank_view().updates(full=True)
        elif not interpreter.busy:
            yield self.view_of(interpreter).updates(full=True)
        else:
            async for update in self._stream_to_tab(interpreter, request, order):
                yield update

    # -- quick controls ---------------------------------------------------------------------

    async def stop(self, session_id: str, request: gr.Request) -> Updates:
        interpreter = await self.lookup(session_id, request)
        if interpreter is None:
            return no_change()
        await interpreter.stop()
        stoppable = interpreter.busy or interpreter.autochat_active
        return {self.page.badge: badge_html(interpreter.state, stoppable=stoppable)}

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
            return {
                self.page.approval_title: "",  # hides the panel (page.js)
                self.page.approval_code: "",
                self.page.approval_id: "",
                self.page.approval_note: "",
            }

        return answer

    async def edit_last(self, session_id: str, request: gr.Request) -> Updates:
        """The person's last message back in the box, to send as its edit; its images go
        back in the tray with it (the edit replaces the whole message: without them, it
        would lose its pictures unless they were attached again)."""
        interpreter = await self.lookup(session_id, request)
        history = interpreter.session.history if interpreter else []
        for message in reversed(history):
            if written_by_person(message):
                count = self.trays.restore(tab_of(request), message.images)
                return {
                    self.page.chat_input: message.content,
                    self.page.edit_mode: True,
                    **self._tray(count),
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
            gr.Warning(str(exc))
            return hide
        return {**self.view_of(interpreter).updates(full=True), **hide}

    # -- streaming: send, retry, AutoChat ------------------------------------------------------

    async def send(self, data: dict[Any, Any], request: gr.Request) -> AsyncIterator[Updates]:
        """Send the message (or the edit of the last one) with the attached images, and
        stream the reply. The images leave the tray with this send (as the text leaves the
        input box); a send the server refuses keeps them, and the text, for `give_back`."""
        form = Form.read(self.page, data)
        ticket = ticket_of(data.get(self.page.ticket))
        tab = tab_of(request)
        text, images = form.text, self.trays.take(tab)
        if not text.strip() and not images:
            yield no_change()  # nothing sent, nothing changes
            return

        def refuse(problem: str) -> Updates:
            gr.Warning(problem)
            self.unsent.keep(tab, text, as_edit=form.as_edit, images=images)
            return no_change()

        if len(text) > MAX_MESSAGE_CHARS:
            yield refuse(
                f"Your message has {len(text):,} characters; the limit is "
                f"{MAX_MESSAGE_CHARS:,}. Please shorten it."
            )
            return
        interpreter = await self.lookup(form.session_id, request)
        if interpreter is None and form.as_edit:
            yield refuse(NOTHING_TO_EDIT)  # (and no empty chat is made for it)
            return
        # A first message makes its chat: until the chat's stream starts, the tab's `settle`
        # waits for it (tabs.Opening), so it does not show the empty new chat over it.
        opening = self.streams.opening(tab) if interpreter is None else None
        try:
            async for update in self._send_to(interpreter, form, images, request, ticket):
                if opening is not None:
                    opening.close()
                yield update
        finally:
            if opening is not None:
                opening.close()

    async def _send_to(
        self,
        interpreter: Interpreter | None,
        form: Form,
        images: Sequence[ImagePart],
        request: gr.Request,
        ticket: int,
    ) -> AsyncIterator[Updates]:
        """`send`, once the message is known to be sendable (`interpreter` None: to a new
        chat, created here)."""
        tab, text = tab_of(request), form.text
        # The message goes with the settings and AutoChat limits the form shows: a new chat
        # is made with them, an open one saves them first (each box saves itself too, but
        # that save can come after a send made at once: saves.py). A value that is wrong is
        # named, and that field keeps its value.
        first: Updates = {}
        if interpreter is not None:
            first = await self._save_form(
                interpreter, form, request, ticket, settings_note=SENT_WITH_PREVIOUS_SETTINGS
            )
        else:
            auto, problem = form.autochat_or(AutoChatSettings())
            if problem:
                gr.Warning(SENT_WITH_PREVIOUS.format(problem=problem))
            try:
                interpreter = await self._create(form, auto, request)
            except InvalidRequest as exc:
                gr.Warning(str(exc))
                self.unsent.keep(tab, text, as_edit=False, images=images)
                yield no_change()
                return
            first = {self.page.session_id: interpreter.id, **self.base_after(interpreter, form)}
        if interpreter.busy and not form.as_edit:
            queued = self._queue(interpreter, form, images, request, ticket, first=first)
            async for update in queued:
                yield update
            return
        target = interpreter

        async def act() -> None:
            try:
                if form.as_edit:
                    await target.edit_last(text, images=images)
                else:
                    await target.send(text, images=images)
            except InvalidRequest:  # said in a toast by _stream_to_tab
                self.unsent.keep(tab, text, as_edit=form.as_edit, images=images)
                raise

        async for update in self._stream_to_tab(target, request, ticket, action=act, first=first):
            yield update

    async def give_back(self, box: str, request: gr.Request) -> Updates:
        """After a send: a message the server refused goes back in the input box (with the
        "edit" tick and its images), unless something new was typed there meanwhile."""
        tab = tab_of(request)
        draft = self.unsent.take(tab)
        if draft is None or (box or "").strip():
            return no_change()
        count = self.trays.put_back(tab, draft.images)
        return {
            self.page.chat_input: draft.text,
            self.page.edit_mode: draft.as_edit,
            **self._tray(count),
        }

    async def _queue(
        self,
        interpreter: Interpreter,
        form: Form,
        images: Sequence[ImagePart],
        request: gr.Request | None,
        ticket: int,
        *,
        first: Updates,
    ) -> AsyncIterator[Updates]:
        """A message sent while a turn (or AutoChat) runs waits for the current step to end
        (it ends AutoChat). Every tab showing the session shows it at once, marked queued;
        a tab that was not following the session live does so from now on. `first` (the
        tab's base after the send's saves) goes with the first update."""
        try:
            await interpreter.send(form.text, images=images)
        except InvalidRequest as exc:
            gr.Warning(str(exc))
            self.unsent.keep(tab_of(request), form.text, as_edit=False, images=images)
            yield first or no_change()
            return
        gr.Info(QUEUED_NOTE)
        self.streams.wake(interpreter.id)
        if self.streams.showing(tab_of(request), interpreter.id) or not interpreter.busy:
            yield first or no_change()
            return
        async for update in self._stream_to_tab(interpreter, request, ticket, first=first):
            yield update

    async def attach(self, files: list[bytes] | None, request: gr.Request) -> Updates:
        """Keep the uploaded images for the tab's next message; refuse what is not an image."""
        count, problems = self.trays.add(tab_of(request), files or [])
        for problem in problems:
            gr.Warning(f"Not attached: {problem}.")
        return self._tray(count)

    async def detach(self, request: gr.Request) -> Updates:
        """The person took the images back."""
        self.trays.take(tab_of(request))
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

    async def retry(self, data: dict[Any, Any], request: gr.Request) -> AsyncIterator[Updates]:
        """Run the last turn again, with the settings the form shows (as a send does)."""
        form = Form.read(self.page, data)
        ticket = ticket_of(data.get(self.page.ticket))
        interpreter = await self.lookup(form.session_id, request)
        if interpreter is None:
            gr.Warning("There is nothing to retry yet.")
            yield no_change()
            return
        first: Updates = {}
        if not interpreter.busy:  # (a retry while a turn runs is refused: nothing changes)
            first = await self._save_form(
                interpreter, form, request, ticket, settings_note=RAN_WITH_PREVIOUS_SETTINGS
            )
        retrying = self._stream_to_tab(
            interpreter, request, ticket, action=interpreter.retry, first=first
        )
        async for update in retrying:
            yield update

    async def _save_form(
        self,
        interpreter: Interpreter,
        form: Form,
        request: gr.Request | None,
        ticket: int,
        *,
        settings_note: str,
        limits_note: str = SENT_WITH_PREVIOUS,
    ) -> Updates:
        """Save the settings and AutoChat limits the form shows to the chat before a turn
        runs (saves.py), naming in a toast a value that is wrong (that field keeps its
        value, and the turn runs all the same). Returns the tab's new base (`base_after`)."""
        # Only the boxes the person changed in this tab: those that differ from what the tab
        # last got for them (bases.py). Not those that differ from the chat's value now: a
        # tab that missed a change made elsewhere would undo it (and an unset temperature
        # shows as 1.0, and must stay unset).
        changed = edited(form.boxes(), form.base, interpreter.id, self.shows(interpreter))
        problems = await save_form(
            self.news,
            tab_of(request),
            interpreter,
            form,
            ticket,
            settings=[name for name in SETTINGS if name in changed],
            limits=[name for name in LIMITS if name in changed],
        )
        if problems.settings:
            gr.Warning(settings_note.format(problem=problems.settings))
        if problems.limits:
            gr.Warning(limits_note.format(problem=problems.limits))
        return self.base_after(interpreter, form)

    async def toggle_autochat(
        self, data: dict[Any, Any], request: gr.Request
    ) -> AsyncIterator[Updates]:
        """Switch AutoChat on (it starts at once when idle after a turn) or off (it stops
        after the current turn)."""
        form = Form.read(self.page, data)
        ticket = ticket_of(data.get(self.page.ticket))
        interpreter = await self.lookup(form.session_id, request)
        tab = tab_of(request)
        if interpreter is None:
            _auto, problem = form.autochat_or(AutoChatSettings())
            if problem:
                gr.Warning(NOT_SAVED.format(problem=problem))
            on = "AutoChat is on: it starts with your first message."
            yield {self.page.autochat_status: on if form.autochat else "AutoChat is off."}
            return
        # What the form shows goes with the switch (its first turn may run at once, as
        # after a send); then the switch.
        first = await self._save_form(
            interpreter,
            form,
            request,
            ticket,
            settings_note=RAN_WITH_PREVIOUS_SETTINGS,
            limits_note=NOT_SAVED,
        )
        enabled = form.autochat
        if interpreter.busy:
            await self._save_autochat(tab, interpreter, enabled)
            if self.streams.showing(tab, interpreter.id):
                yield first  # the running stream shows the effect
            else:
                async for update in self._stream_to_tab(interpreter, request, ticket, first=first):
                    yield update
            return
        target = interpreter

        async def act() -> None:
            await self._save_autochat(tab, target, enabled)

        async for update in self._stream_to_tab(target, request, ticket, action=act, first=first):
            yield update

    async def _save_autochat(self, tab: str, interpreter: Interpreter, on: bool) -> None:
        """Save the tab's AutoChat switch, with the chat's limits as they are then (the tab
        knows it: follow.py)."""
        auto = interpreter.session.autochat.model_copy(update={"enabled": on})
        self.news.saving(tab, interpreter.id, {"autochat": as_published(auto)})
        await interpreter.update(autochat=auto)

    async def _create(self, form: Form, auto: AutoChatSettings, request: gr.Request) -> Interpreter:
        # A setting out of range is named and keeps its default: the message still goes.
        settings, problem = form.settings_or(SessionSettings())
        if problem:
            gr.Warning(SENT_WITH_DEFAULTS.format(problem=problem))
        agent = AgentName(form.role) if form.role in AgentName.__members__ else None
        interpreter = await self.manager.create(
            owner_of(request),
            agent=agent,
            model=form.model or None,
            settings=settings,
            origin=tab_of(request),
        )
        if auto != interpreter.session.autochat:
            await interpreter.update(autochat=auto)
        return interpreter

    async def _stream_to_tab(
        self,
        interpreter: Interpreter,
        request: gr.Request | None,
        ticket: int,
        *,
        action: Callable[[], Awaitable[object]] | None = None,
        first: Updates | None = None,
    ) -> AsyncIterator[Updates]:
        """Run `action` (send, retry, …; none to follow a busy session) and stream the
        session to the tab until it is idle. `first` goes with the first update.

        The tab's older streams (ones still finishing) end first, so their last updates come
        before these; but an action meeting a busy session (an edit or a retry while a turn
        runs) is refused, in a toast, and the stream showing that turn is left running."""
        tab = tab_of(request)
        if action is None or not interpreter.busy:
            await self.streams.supersede(tab, ticket, interpreter.id)
        yielded = False
        with self.streams.watch(tab, interpreter.id, ticket) as watch:
            stream = stream_session(
                interpreter,
                lambda: self.view_of(interpreter),
                action=action,
                first=first,
                interval_s=self.interval_s,
                watch=watch,
            )
            try:
                async with contextlib.aclosing(stream):
                    async for update in stream:
                        yielded = True
                        yield update
            except InvalidRequest as exc:
                gr.Warning(str(exc))
        if not yielded:
            yield no_change()  # a streaming handler must yield once, or Gradio blanks its outputs


def _account_note(request: gr.Request | None) -> str:
    """Who is signed in, and a way out, when the page was opened through the login form
    (a reverse proxy that signs people in has no logout of ours)."""
    username = getattr(request, "username", None) if request is not None else None
    if not isinstance(username, str) or not username:
        return ""
    # a dict, or Gradio's dict-like Obj (which iterates as key-value pairs)
    cookies = dict(getattr(request, "cookies", None) or {})
    signed_in = f"Signed in as **{escape_html(username)}**"
    if not any(str(name).startswith("access-token") for name in cookies):
        return signed_in + "."
    return f'{signed_in} · <a href="logout" target="_self">Log out</a>'  # see page.js


def _label(record: SessionRecord) -> str:
    """A chat in the list: its title and when it last changed, in UTC and saying so (the
    server does not know the browser's time zone)."""
    when = record.updated_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{record.title or 'Untitled chat'} · {when}"
