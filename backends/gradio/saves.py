"""Saving what the chat form shows (system prompt, temperature, the Advanced settings, the
AutoChat limits) to a chat: field by field, and in the order the tab made the changes.

Each box saves itself as it is changed (sidepanel.py), and a send saves the boxes the
person changed in the tab too (those that differ from what the tab last got for them:
bases.py): a box left by clicking Send saves itself in an event of its own, which can come
after the message went, and the turn would run with the old value. These saves skip
Gradio's queue, so the server may handle two of them in the other order than the tab made
them. So each save changes only the fields it is about (a late save of one box cannot undo
another), and a field is not saved from an event older than the tab's newest save of that
field (the events are numbered by the tab: `TabNews.in_order`).

A field that is wrong (empty, out of range) is not saved; the chat keeps its value, and the
first such problem of the settings and of the limits is returned for the page to name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from backends.gradio.follow import TabNews, as_published
from backends.gradio.form import LIMIT_LABELS, Form, take_each
from gui_agent.interpreter import Interpreter
from schema import SessionSettings

__all__ = ["LIMITS", "SETTINGS", "Problems", "save_form"]

SETTINGS = tuple(name for name in SessionSettings.model_fields if name not in ("model",))
"""The session settings the form may show (the model has a picker of its own; the form
has no field for permissions, so it never saves them)."""

LIMITS = tuple(LIMIT_LABELS)
"""The AutoChat limits the form shows."""


@dataclass(frozen=True, slots=True)
class Problems:
    """What was wrong with the fields a save was asked for (None: nothing)."""

    settings: str | None = None
    limits: str | None = None


async def save_form(
    news: TabNews,
    tab: str,
    interpreter: Interpreter,
    form: Form,
    ticket: int,
    *,
    settings: Iterable[str] = (),
    limits: Iterable[str] = (),
) -> Problems:
    """Save the form's `settings` and AutoChat `limits` (schema field names; those the form
    has no field for are skipped) to the chat, each one that is right and newer than the
    tab's last save of it. The tab is told what it saves (`TabNews.saving`), so the change
    coming back is not news to it."""
    session = interpreter.session

    def in_order(name: str) -> bool:
        return news.in_order(tab, interpreter.id, name, ticket)

    wanted = [name for name in settings if name in form.given]
    new_settings, settings_problem = take_each(
        wanted, form.session_setting, session.settings, keep=in_order
    )
    wanted = [name for name in limits if name in form.given]
    new_limits, limits_problem = take_each(
        wanted, form.autochat_limit, session.autochat, keep=in_order
    )
    # (no await between reading the chat's values above and changing them here)
    changes: dict[str, object] = {}
    if new_settings != session.settings:
        changes["settings"] = as_published(new_settings)
    if new_limits != session.autochat:
        changes["autochat"] = as_published(new_limits)
    if changes:
        news.saving(tab, interpreter.id, changes)
        await interpreter.update(
            settings=new_settings if "settings" in changes else None,
            autochat=new_limits if "autochat" in changes else None,
        )
    return Problems(settings=settings_problem, limits=limits_problem)
