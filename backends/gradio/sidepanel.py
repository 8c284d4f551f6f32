"""The side panel's controls that save the chat's settings as they are changed: the agent
role, the model, the system prompt, temperature and Advanced settings, the AutoChat limits.

Each says what it saves to the tab's `TabNews` right before saving it (no await between),
so the tab does not take its own change for one made elsewhere (follow.py).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from backends.gradio.follow import as_published
from backends.gradio.form import SETTINGS_NOT_SAVED, Form
from backends.gradio.handlers import NOT_SAVED, Handlers, tab_of
from backends.gradio.markdown import escape_html
from backends.gradio.stream import Updates, no_change
from gui_agent.exceptions import InvalidRequest
from schema import AgentName, SessionSettings

__all__ = ["SidePanel"]


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
            gr.Warning(str(exc))
            return {handlers.page.role_picker: interpreter.session.agent.value}
        finally:
            subscription.close()

    async def describe_role(self, role: str) -> str:
        """What the picked role does, under the picker."""
        return escape_html(self.handlers.role_notes.get(role, ""))

    async def pick_model(self, session_id: str, model: str, request: gr.Request) -> Updates:
        handlers = self.handlers
        note = {handlers.page.model_note: escape_html(handlers.notes.get(model, ""))}
        interpreter = await handlers.lookup(session_id, request)
        if interpreter is None:
            return note
        settings = interpreter.session.settings.model_copy(update={"model": model})
        handlers.news.saving(tab_of(request), interpreter.id, {"settings": as_published(settings)})
        try:
            await handlers.manager.set_model(interpreter, model)
        except InvalidRequest as exc:
            gr.Warning(str(exc))
            return {handlers.page.model_picker: interpreter.session.settings.model}
        return note

    async def check_settings(self, data: dict[Any, Any]) -> Updates:
        """Say under the settings what is wrong with them as they are typed (nothing saved)."""
        note = self.handlers.page.settings_note
        try:
            Form.read(self.handlers.page, data).session_settings(SessionSettings())
        except InvalidRequest as exc:
            return {note: SETTINGS_NOT_SAVED.format(problem=exc)}
        return {note: ""}

    async def change_settings(self, data: dict[Any, Any], request: gr.Request) -> Updates:
        """Save the system prompt, temperature and Advanced settings as they are changed, or
        say under them what is wrong, saving nothing (this event skips the queue, which has
        no toasts: the note is its only way to say it)."""
        handlers = self.handlers
        note = handlers.page.settings_note
        form = Form.read(handlers.page, data)
        try:
            form.session_settings(SessionSettings())
        except InvalidRequest as exc:
            return {note: SETTINGS_NOT_SAVED.format(problem=exc)}
        interpreter = await handlers.lookup(form.session_id, request, quiet=True)
        if interpreter is None:
            return {note: ""}  # a new chat takes the form's values when it is created
        settings = form.session_settings(interpreter.session.settings)
        if settings != interpreter.session.settings:
            handlers.news.saving(
                tab_of(request), interpreter.id, {"settings": as_published(settings)}
            )
            await interpreter.update(settings=settings)
        return {note: ""}

    async def change_autochat_limits(self, data: dict[Any, Any], request: gr.Request) -> Updates:
        """Save the AutoChat limits as they are typed, or say under them what is wrong (this
        event skips the queue, which has no toasts: the note is its only way to say it)."""
        handlers = self.handlers
        form = Form.read(handlers.page, data)
        try:
            form.autochat_settings()
        except InvalidRequest as exc:
            return {handlers.page.limits_note: NOT_SAVED.format(problem=exc)}
        interpreter = await handlers.lookup(form.session_id, request, quiet=True)
        if interpreter is not None:
            auto = form.autochat_settings(enabled=interpreter.session.autochat.enabled)
            if auto != interpreter.session.autochat:
                handlers.news.saving(
                    tab_of(request), interpreter.id, {"autochat": as_published(auto)}
                )
                await interpreter.update(autochat=auto)
        return {handlers.page.limits_note: ""}
