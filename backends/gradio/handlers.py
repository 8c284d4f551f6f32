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

`Handlers` is made of one mixin per kind of control, on what they share (handler_base.py):
navigation.py (page load, new chat, open, settle), controls.py (stop, approvals, edit,
clear, attachments) and sending.py (send, retry, the AutoChat switch); who a request comes
from is owners.py.
"""

from __future__ import annotations

from backends.gradio.controls import NOTE_FIRST, QuickControls
from backends.gradio.handler_base import LISTED_CHATS, ModelInfoLike, shown_fields
from backends.gradio.navigation import Navigation
from backends.gradio.owners import LOCAL_OWNER, owner_of, tab_of
from backends.gradio.sending import (
    NOT_SAVED,
    NOTHING_TO_EDIT,
    QUEUED_NOTE,
    RAN_WITH_PREVIOUS_SETTINGS,
    SENT_WITH_DEFAULTS,
    SENT_WITH_PREVIOUS,
    SENT_WITH_PREVIOUS_SETTINGS,
    Sending,
)

__all__ = [
    "LISTED_CHATS",
    "LOCAL_OWNER",
    "NOTE_FIRST",
    "NOTHING_TO_EDIT",
    "NOT_SAVED",
    "QUEUED_NOTE",
    "RAN_WITH_PREVIOUS_SETTINGS",
    "SENT_WITH_DEFAULTS",
    "SENT_WITH_PREVIOUS",
    "SENT_WITH_PREVIOUS_SETTINGS",
    "Handlers",
    "ModelInfoLike",
    "owner_of",
    "shown_fields",
    "tab_of",
]


class Handlers(Navigation, QuickControls, Sending):
    """The callbacks of one page layout, bound to a session manager."""
