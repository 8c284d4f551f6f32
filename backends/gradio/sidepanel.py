"""The side panel's controls that save the chat's settings as they are changed: the agent
role, the model, the system prompt, temperature and Advanced settings, the AutoChat limits.

Each says what it saves to the tab's `TabNews` right before saving it (no await between),
so the tab does not take its own change for one made elsewhere (follow.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import gradio as gr

from backends.gradio.form import SETTINGS_NOT_SAVED, Form
from backends.gradio.handlers import NOT_SAVED, Handlers, tab_of
from backends.gradio.layout import model_note_text
from backends.gradio.markdown import escape_html
from backends.gradio.pickers import model_kept, switch_model
from backends.gradio.saves import LIMITS, save_form
from backends.gradio.stream import Updates, no_change
from backends.gradio.tabs import ticket_of
from backends.gradio.toasts import toast_text
from gui_agent.exceptions import InvalidRequest
from schema import AgentName

SEVERAL_NOT_SAVED = "Not saved: AutoChat keeps those limits as they were until you fix them."

__all__ = ["SidePanel"]


def limits_note(problems: Sequence[str]) -> str:
    """The note under the AutoChat limits: what is wrong with each (empty: nothing)."""
    if len(problems) == 1:
        return NOT_SAVED.format(problem=problems[0])
    if problems:
        return f"{'. '.join(problems)}. {SEVERAL_NOT_SAVED}"
    return ""


class SidePanel:
    """The side panel's handlers (they share the page's `Handlers`)."""

    def __init__(self, handlers: Handlers) -> None:
        self.handlers = handlers

    async def pick_role(self, session_id: str, role: str, request: gr.Request) -> Updates:
        handlers = self.handlers
        interpreter = await handlers.lookup(session_id, request)
        if interpreter is None or role not in AgentName.__members__:
            return no_change()
        if interpreter.session.agent is AgentName(role):
            return no_change()  # already so (the dropdown reports one pick more than once)
        subscription = interpreter.subscribe()
        try:
            view = handlers.view_of(interpreter)
            await interpreter.set_agent(AgentName(role))
            if interpreter.busy:
                return no_change()  # the running stream shows the switch
            view.apply(subscription.pending())
            return {handlers.page.chatbot: view.chat.messages()}
        except InvalidRequest as exc:
            gr.Warning(toast_text(exc))
            return {handlers.page.role_picker: interpreter.session.agent.value}
        finally:
            subscription.close()

    async def describe_role(self, role: str) -> str:
        """What the picked role does, under the picker."""
        return escape_html(self.handlers.role_notes.get(role, ""))

    async def pick_model(self, session_id: str, model: str, request: gr.Request) -> Updates:
        handlers = self.handlers
        note = {handlers.page.model_note: model_note_text(model, handlers.notes.get(model, ""))}
        interpreter = await handlers.lookup(session_id, request)
        if interpreter is None:
            return note
        try:
            await switch_model(handlers, tab_of(request), interpreter, model)
        except InvalidRequest as exc:
            gr.Warning(toast_text(exc))  # it names the model the request picked
            return model_kept(handlers, interpreter)
        return note

    async def check_settings(self, data: dict[Any, Any]) -> Updates:
        """Say under the settings what is wrong with them as they are typed (nothing saved;
        one event for every box, as `check_limits`)."""
        problem = Form.read(self.handlers.page, data).problem()
        note = "" if problem is None else SETTINGS_NOT_SAVED.format(problem=problem)
        return {self.handlers.page.settings_note: note}

    def settings_saver(self, name: str) -> Callable[..., Awaitable[Updates]]:
        """The handler that saves the setting `name` (a `SessionSettings` field) as its box
        is changed, that field alone and in the tab's order (saves.py), or says under the
        settings what is wrong: with this box first, else with another (the event skips
        the queue, which has no toasts: the note is its only way to say it). The boxes in
        step with the chat then are the tab's base (bases.py)."""
        return self._saver(name, limit=False)

    def limit_saver(self, name: str) -> Callable[..., Awaitable[Updates]]:
        """The handler that saves the AutoChat limit `name` (an `AutoChatSettings` field)
        as it is typed, as `settings_saver` saves its setting. What is wrong with the limits
        is said by `check_limits`, in an event of its own."""
        return self._saver(name, limit=True)

    async def check_limits(self, data: dict[Any, Any]) -> Updates:
        """Say under the AutoChat limits what is wrong with each of them as they are typed.
        One event for the four boxes, which Gradio runs one at a time (the newest last):
        with an event per box, the note of one typed before could land after the next
        one's and name a box already put right."""
        form = Form.read(self.handlers.page, data)
        problems = [p for name in LIMITS if (p := form.problem(name, limit=True)) is not None]
        return {self.handlers.page.limits_note: limits_note(problems)}

    def _saver(self, name: str, *, limit: bool) -> Callable[..., Awaitable[Updates]]:
        handlers = self.handlers
        page = handlers.page

        async def save(data: dict[Any, Any], request: gr.Request) -> Updates:
            form = Form.read(page, data)
            tab, ticket = tab_of(request), ticket_of(data.get(page.ticket))
            base: Updates = {}
            problem = form.problem(name, limit=limit)
            if problem is None:
                interpreter = await handlers.lookup(form.session_id, request, quiet=True)
                if interpreter is not None:  # (a new chat takes the form's values when made)
                    await save_form(
                        handlers.news,
                        tab,
                        interpreter,
                        form,
                        ticket,
                        settings=() if limit else [name],
                        limits=[name] if limit else (),
                    )
                    # (not when a later event of the tab shows another chat, or saved more)
                    if not handlers.streams.overtaken(tab, ticket):
                        base = handlers.base_after(interpreter, form)
            if limit:  # (what is wrong with the limits is said by `check_limits`)
                return base
            # The note says what the tab's newest save saw (these events skip the queue: an
            # older one handled after a newer would say what is no longer so).
            if not handlers.news.in_order(tab, form.session_id, "(settings note)", ticket):
                return base
            problem = problem or form.problem()  # this box first, else another
            note = "" if problem is None else SETTINGS_NOT_SAVED.format(problem=problem)
            return {page.settings_note: note, **base}

        return save
