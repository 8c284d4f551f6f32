"""Sending a message (or the edit of the last one), retrying the last turn and switching
AutoChat: each saves first what the form shows, then streams the session to the tab; a
message sent while a turn runs is queued, and one the server refuses goes back in the box
(a mixin of `Handlers`: handler_base.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import gradio as gr

from backends.gradio.bases import Base, edited
from backends.gradio.follow import as_published
from backends.gradio.form import Form
from backends.gradio.handler_base import HandlerBase
from backends.gradio.owners import owner_of, tab_of
from backends.gradio.pickers import take_picks
from backends.gradio.saves import LIMITS, SETTINGS, save_form
from backends.gradio.stream import Updates, no_change
from backends.gradio.tabs import send_number_of, ticket_of
from backends.gradio.toasts import toast_text
from gui_agent.exceptions import InvalidRequest
from gui_agent.interpreter import Interpreter
from gui_agent.session import title_from
from schema import (
    MAX_MESSAGE_CHARS,
    AgentName,
    AutoChatSettings,
    ImagePart,
    InterpreterState,
    SessionSettings,
)
from schema.messages import valid_text

__all__ = [
    "ANSWERED_NOW_IN_AUTOCHAT",
    "NOTHING_TO_EDIT",
    "NOT_SAVED",
    "QUEUED_BEHIND_APPROVAL",
    "QUEUED_NOTE",
    "RAN_WITH_PREVIOUS_SETTINGS",
    "SENT_WITH_DEFAULTS",
    "SENT_WITH_PREVIOUS",
    "SENT_WITH_PREVIOUS_SETTINGS",
    "Sending",
    "queued_words",
]

QUEUED_NOTE = "Queued: the agent reads it when the current step ends."
QUEUED_BEHIND_APPROVAL = (
    "Queued behind the open approval: the agent reads your message only once you answer it "
    "(Allow or Deny, in the panel under the chat). Stop ends the turn instead, and your "
    "message then stays unanswered."
)
"""Said for a message sent while a tool call waits for the person's approval: the step it
waits for ends only when they answer."""
ANSWERED_NOW_IN_AUTOCHAT = (
    "Sent: the agent answers it now, in place of AutoChat's next automatic turn "
    "(AutoChat goes on from your message while it is switched on)."
)
"""Said for a message sent while AutoChat waits between two turns: no step is running,
and the message is taken up at once."""
SENT_WITH_DEFAULTS = (
    "{problem}. Your message was sent; the new chat keeps that setting's default until you fix it."
)
NOT_SAVED = "{problem}. Not saved: AutoChat keeps that limit as it was until you fix it."
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


class Sending(HandlerBase):
    """The handlers that run turns: send, retry, the AutoChat switch."""

    async def send(self, data: dict[Any, Any], request: gr.Request) -> AsyncIterator[Updates]:
        """Send the message (or the edit of the last one) with the attached images, and
        stream the reply. The images leave the tray with this send (as the text leaves the
        input box); a send the server refuses keeps them, and the text, for `give_back`.
        The tab's sends are handed on in the order the person made them (send_order.py):
        this one once it is in its chat, or refused (before its first update)."""
        tab = tab_of(request)
        number = send_number_of(data.get(self.page.ticket))
        await self.sends.in_turn(tab, number)
        try:
            async for update in self._send(data, request):
                self.sends.handed(tab, number)
                yield update
        finally:
            self.sends.handed(tab, number)

    async def _send(self, data: dict[Any, Any], request: gr.Request) -> AsyncIterator[Updates]:
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
        # A first message makes its chat: until the chat's stream starts, the tab's `settle`
        # waits for it (tabs.Opening), so it does not show the empty new chat over it. So
        # does a message sent right after it, before the page knew the chat: it goes to that
        # chat, not to a second new one. (Registered before any wait: the sends of a tab
        # are handled at once, in the order they came.)
        opening = None if form.session_id else self.streams.opening(tab)
        try:
            session_id = form.session_id
            if opening is not None and not form.as_edit:
                await self.streams.opened(tab, before=opening)
                session_id = self.streams.made_before(tab, ticket)
            interpreter = await self.lookup(session_id, request)
            if interpreter is not None and opening is not None:
                opening.close()  # (it makes no chat)
            if interpreter is None and form.as_edit:
                yield refuse(NOTHING_TO_EDIT)  # (and no empty chat is made for it)
                return
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
                gr.Warning(toast_text(exc))
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
        if not form.as_edit and not target.session.title and text.strip():
            # The message will title the chat: that title is this tab's own doing, not news
            # from elsewhere. The Title box gets it through the title offer (app.py), which
            # keeps a title the person is typing there meanwhile; a follow would set it. So
            # it is no news to the tab (an echo), and its base holds it: a keep-alive started
            # again catches the tab up by its base (presence.py), and would otherwise set
            # the box to it.
            title = title_from(valid_text(text))
            self.news.saving(tab, target.id, {"title": title})
            base = first.get(self.page.form_base)
            first[self.page.form_base] = Base.updated(base, target.id, {"title": title})

        async def act() -> None:
            try:
                if form.as_edit:  # (of the message Edit last message put in the box, if so)
                    meant = self.edits.of(tab, target.id)
                    await target.edit_last(text, images=images, message_id=meant)
                else:
                    await target.send(text, images=images)
                self.edits.end(tab)
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
        self.trays.put_back(tab, draft.images)
        return {
            self.page.chat_input: draft.text,
            self.page.edit_mode: draft.as_edit,
            **self._tray(request),
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
        tab's base after the send's saves) goes with the first update. The toast says what
        the message waits for (`queued_words`)."""
        words = queued_words(interpreter.state, autochat=interpreter.autochat_active)
        try:
            await interpreter.send(form.text, images=images)
        except InvalidRequest as exc:
            gr.Warning(toast_text(exc))
            self.unsent.keep(tab_of(request), form.text, as_edit=False, images=images)
            yield first or no_change()
            return
        gr.Info(words)
        self.streams.wake(interpreter.id)
        if self.streams.showing(tab_of(request), interpreter.id) or not interpreter.busy:
            yield first or no_change()
            return
        async for update in self._stream_to_tab(interpreter, request, ticket, first=first):
            yield update

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
        """Save the role and model the pickers show (pickers.py), and the settings and
        AutoChat limits the form shows, to the chat before a turn runs (saves.py), naming
        in a toast a value that is wrong (that field keeps its value, and the turn runs all
        the same). Returns the tab's new base (`base_after`)."""
        tab = tab_of(request)
        await take_picks(self, tab, interpreter, form.role, form.model)
        # Only the boxes the person changed in this tab: those that differ from what the tab
        # last got for them (bases.py). Not those that differ from the chat's value now: a
        # tab that missed a change made elsewhere would undo it (and an unset temperature
        # shows as 1.0, and must stay unset).
        changed = edited(form.boxes(), form.base, interpreter.id, self.shows(interpreter))
        problems = await save_form(
            self.news,
            tab,
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
        # The tool modes set in the new chat before this message (new_chat_modes.py): the
        # chat is made with them, so its first turn already runs with them.
        tab = tab_of(request)
        modes = {**settings.permissions, **self.new_modes.of(tab)}
        interpreter = await self.manager.create(
            owner_of(request),
            agent=agent,
            model=form.model or None,
            settings=settings.model_copy(update={"permissions": modes}),
            origin=tab,
        )
        self.new_modes.forget(tab)
        if auto != interpreter.session.autochat:
            await interpreter.update(autochat=auto)
        return interpreter


def queued_words(state: InterpreterState, *, autochat: bool) -> str:
    """What a message sent while the session is busy waits for, as its toast says: the
    person's answer to an open approval (WAITING), nothing while AutoChat waits between two
    turns (no step runs: the message is answered at once), else the current step."""
    if state is InterpreterState.WAITING:
        return QUEUED_BEHIND_APPROVAL
    if state is not InterpreterState.RUNNING and autochat:
        return ANSWERED_NOW_IN_AUTOCHAT
    return QUEUED_NOTE
