"""Settings typed just before a reload: saved by the reloaded page.

The system prompt and the Advanced settings save when the person leaves their box or presses
Enter (app.py). A reload from inside the box, or within the save's round trip, used to lose
what was typed there. So the page keeps such a box's text in the tab's session storage, by
the box's element id and for the chat the tab showed, until the server's answer shows the
box in step with the chat (page.js), and the reloaded page sends what is kept with its first
event. There it is saved as leaving the box would have saved it: a value that is right is
saved (and shown); one that is wrong is shown as typed, with the settings note saying what
is wrong, as before the reload. Kept text of another chat than the one the page opens is
left alone; on a new chat (nothing saved yet: a new chat takes the form's values when it is
made) the boxes show it again.

The tool modes set in a new chat (new_chat_modes.py, kept on the server by tab) are kept the
same way (`modes`, tool name -> mode): the reloaded tab is another tab to the server, and
its new chat is made with them again. The page lets go of them when the tab shows a chat,
or a New chat.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from backends.gradio.follow import TabNews
from backends.gradio.form import SETTINGS_NOT_SAVED, Form
from backends.gradio.layout import Page
from backends.gradio.saves import save_form
from backends.gradio.stream import Updates
from gui_agent.interpreter import Interpreter
from schema import PermissionMode

__all__ = [
    "MAX_KEPT_CHARS",
    "UNSAVED_KEY_JS",
    "Unsaved",
    "kept_boxes",
    "saved_again",
    "shown_again",
    "with_unsaved",
]

logger = logging.getLogger(__name__)

UNSAVED_KEY_JS = '"gui-agent-unsaved:" + location.pathname'
"""Where the page keeps the text (a JS expression: the key in the tab's session storage)."""

MAX_KEPT_CHARS = 100_000
"""The most text one kept box may bring back (the system prompt's own limit is lower: the
save names it); more is not a box of this page."""

MAX_KEPT_MODES = 200
"""The most tool modes a reloaded page may bring back (more tools than a chat offers)."""


def kept_boxes(page: Page) -> dict[str, str]:
    """The boxes that save when left, by element id: the `SessionSettings` field each shows
    (page.js keeps what is typed in these)."""
    return {str(box.elem_id): name for name, box in _boxes(page).items()}


def with_unsaved(page_js: str, page: Page) -> str:
    """page.js with what its keeping needs filled in: the storage key and the boxes."""
    return page_js.replace("__GUI_AGENT_UNSAVED_KEY__", UNSAVED_KEY_JS).replace(
        "__GUI_AGENT_SAVED_WHEN_LEFT__", json.dumps(kept_boxes(page))
    )


@dataclass(frozen=True, slots=True)
class Unsaved:
    """What a tab had typed and not yet saved before it was reloaded."""

    session_id: str = ""
    """The chat the tab showed ("" a new chat)."""
    values: Mapping[str, str] = field(default_factory=dict)
    """By `SessionSettings` field, as typed."""
    modes: Mapping[str, PermissionMode] = field(default_factory=dict)
    """The tool modes set in the new chat (by tool name; only for a new chat): the chat
    its first message makes is made with them (new_chat_modes.py)."""

    @classmethod
    def decode(cls, raw: object, page: Page) -> Unsaved:
        """What the page sent: JSON `{"chat": id, "boxes": {element id: text}, "modes":
        {tool: mode}}` ("modes" optional). Anything else, and boxes that are not this
        page's, count as nothing kept; a mode that is not one is left out (which tools the
        new chat has is for the caller to check)."""
        if not isinstance(raw, str) or not raw:
            return cls()
        try:
            data: Any = json.loads(raw)
        except ValueError:
            logger.warning("a reloaded page sent kept settings that are not JSON")
            return cls()
        if not isinstance(data, dict):
            return cls()
        chat, boxes = data.get("chat"), data.get("boxes")
        if not isinstance(chat, str) or not isinstance(boxes, dict):
            return cls()
        names = kept_boxes(page)
        values = {
            names[box]: text
            for box, text in boxes.items()
            if box in names and isinstance(text, str) and len(text) <= MAX_KEPT_CHARS
        }
        return cls(chat, values, _modes(data.get("modes")) if not chat else {})

    def of(self, session_id: str) -> Mapping[str, str]:
        """The kept values, if they were typed for that chat (else none)."""
        return self.values if self.session_id == session_id else {}


async def saved_again(
    page: Page, news: TabNews, interpreter: Interpreter, kept: Unsaved, *, tab: str, ticket: int
) -> tuple[str, ...]:
    """Save the values kept for `interpreter`'s chat, as leaving their boxes would have (in
    the tab's order, field by field: saves.py). The fields it refused (wrong values)."""
    values = kept.of(interpreter.id)
    if not values:
        return ()
    boxes = _boxes(page)
    form = Form.read(page, {page.session_id: interpreter.id, **_by_box(boxes, values)})
    await save_form(news, tab, interpreter, form, ticket, settings=list(values))
    refused = tuple(name for name in values if form.problem(name) is not None)
    logger.info(
        "a reloaded tab brought %d setting(s) typed before the reload; %d refused",
        len(values),
        len(refused),
    )
    return refused


def shown_again(page: Page, kept: Unsaved, session_id: str, fields: tuple[str, ...]) -> Updates:
    """The boxes of `fields` showing what was typed in them for `session_id`'s chat, and
    the settings note naming the first problem among them (none: no note)."""
    values = {name: text for name, text in kept.of(session_id).items() if name in fields}
    if not values:
        return {}
    boxes = _boxes(page)
    form = Form.read(page, _by_box(boxes, values))
    problem = next((found for name in values if (found := form.problem(name)) is not None), None)
    note = "" if problem is None else SETTINGS_NOT_SAVED.format(problem=problem)
    return {**_by_box(boxes, values), page.settings_note: note}


def _modes(raw: object) -> dict[str, PermissionMode]:
    """The tool modes a page kept: those that are modes, up to `MAX_KEPT_MODES`."""
    if not isinstance(raw, dict):
        return {}
    known = {mode.value: mode for mode in PermissionMode}
    kept = {
        tool: known[mode]
        for tool, mode in raw.items()
        if isinstance(tool, str) and tool and isinstance(mode, str) and mode in known
    }
    return dict(list(kept.items())[:MAX_KEPT_MODES])


def _boxes(page: Page) -> dict[str, Any]:
    """The boxes that save when left, by the `SessionSettings` field each shows."""
    return {"system_prompt": page.system_prompt, **page.advanced_settings()}


def _by_box(boxes: Mapping[str, Any], values: Mapping[str, str]) -> dict[Any, str]:
    return {boxes[name]: text for name, text in values.items()}
