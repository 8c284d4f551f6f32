"""The role and model pickers: each pick is saved by the picker's own event (sidepanel.py),
and a send, retry or AutoChat switch of the tab takes them too, as the pickers show them.

The browser sends each event on a connection of its own, so a message sent right after a
pick could reach the server before the pick did: its turn ran as the role (or with the
model) the chat had before, while the picker showed the new one. So a turn runs with what
the pickers show; the pick, when it comes, finds the chat so and changes nothing more.
Unlike the settings boxes (bases.py), a picker is taken as it shows even when it differs
because the tab has not yet heard of a pick made in another tab: the turn runs as the
person sending it sees."""

from __future__ import annotations

import contextlib

from backends.gradio.follow import as_published
from backends.gradio.handler_base import HandlerBase
from backends.gradio.layout import model_note_text
from backends.gradio.stream import Updates
from gui_agent.exceptions import InvalidRequest
from gui_agent.interpreter import Interpreter
from schema import AgentName

__all__ = ["model_kept", "switch_model", "take_picks"]


async def switch_model(
    handlers: HandlerBase, tab: str, interpreter: Interpreter, model: str
) -> None:
    """Give the chat `model`, said to the tab's news first (its own change, not one made
    elsewhere: follow.py). InvalidRequest for a model the server does not have."""
    settings = interpreter.session.settings.model_copy(update={"model": model})
    handlers.news.saving(tab, interpreter.id, {"settings": as_published(settings)})
    await handlers.manager.set_model(interpreter, model)


def model_kept(handlers: HandlerBase, interpreter: Interpreter) -> Updates:
    """The model picker and its note back at the chat's model (a pick that was refused)."""
    page = handlers.page
    kept = interpreter.session.settings.model or handlers.manager.models.default
    return {
        page.model_picker: interpreter.session.settings.model,
        page.model_note: model_note_text(kept, handlers.notes.get(kept, "")),
    }


async def take_picks(
    handlers: HandlerBase, tab: str, interpreter: Interpreter, role: str, model: str
) -> None:
    """Give the chat the role and model its pickers show in the tab (`role`, `model`), where
    they differ from the chat's. One the server refuses is left as it is: the picker's own
    event says why, in a toast, and puts the picker back."""
    if role in AgentName.__members__ and AgentName(role) is not interpreter.session.agent:
        with contextlib.suppress(InvalidRequest):
            await interpreter.set_agent(AgentName(role))
    current = interpreter.session.settings.model or handlers.manager.models.default
    if model and model != current:
        with contextlib.suppress(InvalidRequest):
            await switch_model(handlers, tab, interpreter, model)
