"""What the page's handlers share (`Handlers` is made of this and the mixins beside it:
navigation.py, controls.py, sending.py): their collaborators, finding a tab's chat, what the
page shows of it (its view, its settings boxes and the tab's base, the chats list, the
attachments tray), and streaming a session to a tab until it is idle."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from datetime import UTC
from typing import Protocol

import gradio as gr

from backends.gradio.attach import Trays, attachments_note
from backends.gradio.bases import Base, in_step
from backends.gradio.coalesce import DEFAULT_INTERVAL_S
from backends.gradio.follow import TabNews
from backends.gradio.form import Form, based_fields
from backends.gradio.layout import Page, model_note_text, setting_text
from backends.gradio.list_order import ListOrder
from backends.gradio.markdown import MediaLink, escape_html
from backends.gradio.media import MediaShelf
from backends.gradio.new_chat_modes import NewChatModes
from backends.gradio.owners import owner_of, tab_of
from backends.gradio.panels import PanelState
from backends.gradio.renderer import ChatView
from backends.gradio.send_order import SendOrder
from backends.gradio.stream import PageView, Updates, no_change, stream_session
from backends.gradio.tabs import TabStreams
from backends.gradio.toasts import toast_text
from backends.gradio.tray_preview import tray_preview
from backends.gradio.unsent import BegunEdits, Unsent
from gui_agent.exceptions import InvalidRequest
from gui_agent.interpreter import Interpreter
from gui_agent.manager import SessionManager, SessionNotFound
from gui_agent.tools.permissions import ToolStanding, standings
from schema import (
    AutoChatSettings,
    InterpreterState,
    PermissionMode,
    SessionRecord,
    SessionSettings,
)

__all__ = ["LISTED_CHATS", "WORKING_WORDS", "HandlerBase", "ModelInfoLike", "shown_fields"]

logger = logging.getLogger(__name__)

LISTED_CHATS = 200
"""The chats list shows this many, the most recent first; past that it says to search."""


class ModelInfoLike(Protocol):
    """A configured model as the model picker lists it (connectors.registry.ModelInfo)."""

    @property
    def name(self) -> str: ...
    @property
    def is_default(self) -> bool: ...
    @property
    def note(self) -> str: ...


def shown_fields(page: Page, values: Updates) -> dict[str, object]:
    """Of `settings_values`, what each field the tab's base keeps shows, by field."""
    return {name: values[box] for name, box in based_fields(page).items()}


def new_chat_standings(
    manager: SessionManager, chosen: Mapping[str, PermissionMode] | None = None
) -> tuple[ToolStanding, ...]:
    """How the tools of a chat not yet made stand: the app's own modes, with those `chosen`
    for it (`NewChatModes`)."""
    return standings(manager.permissions, manager.tools_factory(), chosen or {}, frozenset())


class HandlerBase:
    """The collaborators of one page layout's callbacks, and what they share."""

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
        media: MediaShelf | None = None,
    ) -> None:
        self.manager = manager
        self.media = media
        """Where the chats' images are served from (None: they are shown inline)."""
        self.page = page
        self.icons = icons
        self.languages = languages
        self.notes = {model.name: model.note for model in models}
        self.interval_s = interval_s
        self.trays = Trays()
        self.unsent = Unsent()
        self.edits = BegunEdits()
        """Messages refused after the browser emptied the input box (`give_back`)."""
        self.streams = TabStreams()
        self.sends = SendOrder()
        """Each tab's sends, handed on in the order the person made them."""
        self.news = TabNews()
        """What each tab has to catch up on of changes made elsewhere (follow.py)."""
        self.lists = ListOrder()
        """Which chats-list reading each tab got last (list_order.py)."""
        self.closing = closing if closing is not None else asyncio.Event()
        """Set when the server shuts down: every tab's keep-alive event ends (presence.py)."""
        self.role_notes = {
            name.value: role.description for name, role in manager.architectures_factory().items()
        }
        self.new_chat_tools = new_chat_standings(manager)
        """How a new chat's tools stand (the app's own modes): what a blank view shows."""
        self.new_modes = NewChatModes()
        """The tool modes each tab set for the new chat it shows (made with them)."""

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
        return PageView.of(
            self.page,
            interpreter,
            icons=self.icons,
            languages=self.languages,
            media=self.media_link(interpreter.session.owner),
        )

    def blank_view(self, owner: str | None = None, *, tab: str | None = None) -> PageView:
        """An empty chat (`owner`: whose images it may show, by address; `tab`: its tools
        as that tab set them for its new chat)."""
        link = self.media_link(owner) if owner is not None else None
        tools = self.new_chat_tool_standings(tab)
        panels = PanelState(tools=lambda: tools)
        return PageView(self.page, ChatView(icons=self.icons, media=link), panels)

    def new_chat_tool_standings(self, tab: str | None) -> tuple[ToolStanding, ...]:
        """How the tools of `tab`'s new chat stand (None: of any new chat)."""
        chosen = self.new_modes.of(tab) if tab is not None else {}
        return new_chat_standings(self.manager, chosen) if chosen else self.new_chat_tools

    def media_link(self, owner: str) -> MediaLink | None:
        """The addresses of the images shown to `owner` (None: shown inline)."""
        return self.media.linker(owner) if self.media is not None else None

    def opened(self, tab: str, interpreter: Interpreter) -> Updates:
        """The chat in full, view and settings boxes, for a tab that opens it; the tab's
        keep-alive reads the chat's events from here on (`TabStreams.built`: a change saved
        before it listens is not missed)."""
        self.streams.built(tab, interpreter.id, interpreter.last_seq)
        self.new_modes.forget(tab)  # (set for the new chat the tab showed before)
        return {
            **self.view_of(interpreter).updates(full=True),
            **self.settings_values(interpreter),
            **self.no_tool_picked(),
        }

    def no_tool_picked(self) -> Updates:
        """The tool picker and its mode, emptied: a tool picked in the chat shown before,
        with that chat's mode for it, would say what this one does not do."""
        return {self.page.tool_picker: None, self.page.tool_mode: None}

    async def session_choices(self, owner: str, query: str | None = None) -> list[tuple[str, str]]:
        """The owner's chats whose title holds `query` (spaces around it do not count)."""
        records = await self.manager.list(
            owner, query=(query or "").strip() or None, limit=LISTED_CHATS
        )
        working = self.manager.working_state  # (read once the list is: the newest states)
        return [(_label(record, working(record.id)), record.id) for record in records]

    def list_changes(self, owner: str) -> int:
        """How many changes of what `owner`'s chats list shows were announced so far: of
        the list itself and of its chats' work (`TabNews.listed`)."""
        manager = self.manager
        return manager.changes.announced(owner) + manager.activity.announced(owner)

    async def session_list_update(
        self,
        owner: str,
        current: str,
        query: str = "",
        *,
        tab: str | None = None,
        searched: bool = False,
    ) -> Updates:
        """The chats list of `owner`, `current` selected, filtered by `query`. For a `tab`:
        filtered by what its search box was last given instead (`searched`: `query` is
        that, from the search's event or one that sets the box), and nothing when the tab
        got a list read after this one began (list_order.py)."""
        if tab is not None and searched:
            self.lists.searched(tab, query)
        elif tab is not None:
            query = self.lists.query(tab, query)
        reading = self.lists.begin()
        choices = await self.session_choices(owner, query)
        if tab is not None and not self.lists.take_up(tab, reading):
            return {}
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
            page.model_note: model_note_text(model, self.notes.get(model, "")),
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

    def _tray(self, request: gr.Request | None, *, empty: bool = False) -> Updates:
        """The attachments of `request`'s tab as the page shows them: how many, a picture of
        each, and the buttons that take them back (`empty`: as an empty tray)."""
        page = self.page
        items = () if empty else self.trays.shown(tab_of(request))
        link = self.media_link(owner_of(request)) if items else None
        return {
            page.attach_note: attachments_note(len(items)),
            page.detach_btn: gr.update(visible=bool(items)),
            page.attach_preview: tray_preview(items, link),
        }

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
        with self.streams.watch(tab, interpreter.id, ticket) as watch:
            try:
                # A turn started as the last one ended (a message queued then: its send saw
                # this stream showing the chat, and left the showing to it) is shown and
                # followed too, as long as the tab shows the chat: the stream goes on while
                # the chat is busy, or has events its last update did not show.
                while True:
                    seen = -1
                    stream = stream_session(
                        interpreter,
                        lambda: self.view_of(interpreter),
                        action=action,
                        first=first,
                        interval_s=self.interval_s,
                        watch=watch,
                    )
                    async with contextlib.aclosing(stream):
                        async for update in stream:
                            seen = interpreter.last_seq
                            yield update
                    if watch.ended or not (interpreter.busy or interpreter.last_seq != seen):
                        break
                    action, first = None, None
            except InvalidRequest as exc:
                gr.Warning(toast_text(exc))
        # The last update changes nothing: Gradio's last message of a stream repeats its last
        # update, and that message can come after the updates of the tab's next event (a
        # message sent as this turn ended), whose view it would cover with this older one.
        # (A streaming handler must yield once anyway, or Gradio blanks its outputs.)
        yield no_change()


WORKING_WORDS = {
    InterpreterState.RUNNING: "working",
    InterpreterState.WAITING: "needs approval",
}
"""What the chats list says of a chat whose agent works, or waits for the person's approval
(in words: not a colour alone)."""


def _label(record: SessionRecord, working: InterpreterState | None = None) -> str:
    """A chat in the list: its title and when it last changed, in UTC and saying so (the
    server does not know the browser's time zone), and whether it works now (`working`:
    `SessionManager.working_state`), "• working" or "• needs approval"."""
    when = record.updated_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    words = WORKING_WORDS.get(working) if working is not None else None
    sign = f" • {words}" if words else ""
    return f"{record.title or 'Untitled chat'} · {when}{sign}"
