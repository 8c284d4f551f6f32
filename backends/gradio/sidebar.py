"""The chats sidebar: search, refresh after a turn, rename, delete (with a confirmation).

Renames and deletes go through the session manager, whose change feed tells the user's other
tabs (follow.py); a turn's end is not in that feed, so `refresh_list` tells them itself."""

from __future__ import annotations

import contextlib
import json

import gradio as gr

from backends.gradio.bases import Base
from backends.gradio.handlers import Handlers, owner_of, tab_of
from backends.gradio.stream import Updates, no_change
from backends.gradio.tabs import ticket_of
from gui_agent.manager import SessionNotFound
from schema.requests import MAX_TITLE_CHARS, plain_title

__all__ = ["Sidebar"]


class Sidebar:
    """The sidebar's handlers (they share the page's `Handlers`)."""

    def __init__(self, handlers: Handlers) -> None:
        self.handlers = handlers

    async def search(self, query: str, session_id: str, request: gr.Request) -> Updates:
        return await self.handlers.session_list_update(
            owner_of(request), session_id, query, tab=tab_of(request), searched=True
        )

    async def refresh_list(
        self, session_id: str, query: str, title: str, request: gr.Request
    ) -> Updates:
        """The session list after a turn (new chat saved, title set, order changed), and
        the title the first message gave, offered to the Title box. The chat selected is
        the one the tab shows now, as the server knows it: the browser may not have heard
        yet that the view changed (another chat picked while the turn ended). The user's
        other tabs refresh their lists too (follow.py).

        The offer is `[session id, title]` (JSON) or empty; the browser puts the title in
        the box only if the box is still empty and still shows that chat when the answer
        arrives (app.py `_TITLE_OFFER_JS`): on a busy server, a person may have typed a
        title or opened another chat meanwhile, and that must stay."""
        tab, owner = tab_of(request), owner_of(request)
        shown = self.handlers.streams.shown(tab)
        current = session_id if shown is None else shown
        self.handlers.news.chats_changed(owner, by=tab)
        updates = await self.handlers.session_list_update(owner, current, query, tab=tab)
        offer = ""
        if not (title or "").strip() and current and current == session_id:
            interpreter = await self.handlers.lookup(current, request, quiet=True)
            if interpreter is not None and interpreter.session.title:
                offer = json.dumps([current, interpreter.session.title])
        updates[self.handlers.page.title_offer] = offer
        return updates

    async def rename(
        self, session_id: str, title: str, query: str, request: gr.Request, base: str = ""
    ) -> Updates:
        """Save the title the box shows. The tab's base (bases.py) holds it from now on: a
        keep-alive started again catches the tab up by the base, and would otherwise set
        the box to this title over another one being typed there."""
        if not session_id:
            gr.Warning("Send a message first: a new chat is saved with its first message.")
            return no_change()
        if not title.strip():
            gr.Warning("A title cannot be empty.")
            return no_change()
        owner, tab = owner_of(request), tab_of(request)
        try:
            interpreter = await self.handlers.manager.get(session_id, owner)
        except SessionNotFound:
            gr.Warning("This chat no longer exists.")
            return no_change()
        saved = plain_title(title)[:MAX_TITLE_CHARS]  # as the session keeps it
        # The user's other tabs hear of it from the manager's feed (follow.py); this one
        # knows it saves this title, so neither the event nor the feed is news to it.
        self.handlers.news.saving(tab, session_id, {"title": saved})
        await self.handlers.manager.update(interpreter, title=title, origin=tab)
        gr.Info("Chat renamed.")
        return {
            **await self.handlers.session_list_update(owner, session_id, query, tab=tab),
            self.handlers.page.form_base: Base.updated(base, session_id, {"title": saved}),
        }

    def ask_delete(self, session_id: str) -> Updates:
        if not session_id:
            gr.Warning("There is nothing to delete yet.")
            return no_change()
        return {self.handlers.page.confirm_row: gr.update(visible=True)}

    def cancel_delete(self) -> Updates:
        return {self.handlers.page.confirm_row: gr.update(visible=False)}

    async def delete(self, session_id: str, ticket: str, request: gr.Request) -> Updates:
        tab, owner = tab_of(request), owner_of(request)
        await self.handlers.streams.supersede(tab, ticket_of(ticket), "")
        if session_id:
            with contextlib.suppress(SessionNotFound):  # the other tabs hear it from the feed
                await self.handlers.manager.delete(session_id, owner, origin=tab)
            gr.Info("Chat deleted.")
        return await self.handlers.new_chat(ticket, request)
