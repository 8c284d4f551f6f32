"""What replaces a tab's view: the page opening (on the chat this browser showed last), a
new chat, a chat picked in the list, and `settle`, which runs after each of them to put the
view right (a mixin of `Handlers`: handler_base.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import gradio as gr

from backends.gradio.handler_base import HandlerBase
from backends.gradio.owners import account_note, owner_of, tab_of
from backends.gradio.panels import tools_markdown
from backends.gradio.stream import Updates, no_change
from backends.gradio.tabs import ticket_of
from backends.gradio.unsaved import Unsaved, saved_again, shown_again

__all__ = ["Navigation"]


class Navigation(HandlerBase):
    """The handlers that change which chat a tab shows."""

    async def on_load(
        self, remembered: str, ticket: str, unsaved: str, request: gr.Request
    ) -> Updates:
        """The page opens on the chat this browser showed last (a reload, a server restart),
        else on a new chat; with login, it says who is signed in. Settings typed there just
        before a reload (`unsaved`, kept by the page) are saved first (unsaved.py)."""
        owner, tab, order = owner_of(request), tab_of(request), ticket_of(ticket)
        # (said before any await: a chat made from now until the keep-alive listens is news)
        self.news.listed(tab, self.list_changes(owner))
        interpreter = await self.lookup(remembered or "", request, quiet=True)
        kept = Unsaved.decode(unsaved, self.page)
        # A new chat is what the page shows already: leave it, and a message sent at once.
        # That send can be an event triggered before this one (the person sent before the
        # page's load events ran): its reply streams on into the page, not superseded.
        if interpreter is not None:
            await self.streams.supersede(tab, order, interpreter.id)
        opened: Updates = {}
        if interpreter is not None and not self.streams.overtaken(tab, order):
            refused = await saved_again(
                self.page, self.news, interpreter, kept, tab=tab, ticket=order
            )
            opened = {
                **self.opened(tab, interpreter),
                **shown_again(self.page, kept, interpreter.id, refused),
            }
        elif interpreter is None:  # (the boxes are the new chat's only settings)
            opened = {
                **shown_again(self.page, kept, "", tuple(kept.of(""))),
                **self._modes_again(tab, kept),
            }
        current = interpreter.id if opened and interpreter is not None else ""
        return {
            **opened,
            **await self.session_list_update(owner, current, tab=tab),
            self.page.account: account_note(request),
        }

    def _modes_again(self, tab: str, kept: Unsaved) -> Updates:
        """The tool modes set in the new chat before a reload, for the reloaded tab's new
        chat (those of tools it has), and the tools panel saying them."""
        names = {standing.name for standing in self.new_chat_tools}
        modes = {tool: mode for tool, mode in kept.modes.items() if tool in names}
        if not modes:
            return {}
        for tool, mode in modes.items():
            self.new_modes.set(tab, tool, mode)
        return {self.page.tools_panel: tools_markdown(self.new_chat_tool_standings(tab))}

    async def new_chat(self, ticket: str, request: gr.Request) -> Updates:
        tab, order = tab_of(request), ticket_of(ticket)
        await self.streams.supersede(tab, order, "")
        view = self.blank_view()
        if self.streams.overtaken(tab, order):
            return no_change()
        return {
            self.page.chat_input: "",
            **view.updates(full=True),
            **await self.no_chat(tab, owner_of(request)),
        }

    async def no_chat(self, tab: str, owner: str, query: str | None = None) -> Updates:
        """All but the view, for a tab that shows no chat (a new chat, a replay, a chat
        deleted elsewhere): the new chat's settings and title boxes, no tool picked, nothing
        chosen in the list. The list shows every chat, and so does the search box (not a
        stale query), unless `query` is given: then it is the list of that search."""
        self.new_modes.forget(tab)  # (a new chat starts with the app's own tool modes)
        listed = await self.session_list_update(
            owner, "", query or "", tab=tab, searched=query is None
        )
        return {
            self.page.session_id: "",
            **self.settings_values(None),
            **self.no_tool_picked(),
            **({self.page.search: ""} if query is None else {}),
            **listed,
        }

    async def open_session(self, selected: str | None, ticket: str, request: gr.Request) -> Updates:
        tab, order = tab_of(request), ticket_of(ticket)
        await self.streams.supersede(tab, order, selected or "")
        interpreter = await self.lookup(selected or "", request)
        if interpreter is None:
            return await self.new_chat(ticket, request)
        if self.streams.overtaken(tab, order):
            return no_change()
        return {self.page.session_id: interpreter.id, **self.opened(tab, interpreter)}

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
            yield self.blank_view(tab=tab).updates(full=True)
        elif not interpreter.busy:
            yield self.view_of(interpreter).updates(full=True)
        else:
            async for update in self._stream_to_tab(interpreter, request, order):
                yield update
