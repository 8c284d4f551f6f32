"""What a tab's settings boxes last got from the server (their base), kept by the browser.

A send, a retry or the AutoChat switch saves the boxes the person changed in the tab
(`Handlers._save_form`): a box whose value differs from its base. Comparing with the chat's
value as it is now instead would undo a change made in another tab that this one missed: its
box still shows the old value, which differs from the chat's, though nobody touched it here.
A tab misses such changes when its keep-alive event ends (the laptop slept, the connection
dropped, the server restarted): the news of changes made elsewhere (follow.py) is kept on the
server for as long as that event runs, and is gone with it.

So the base lives in the page: a hidden box (`Page.form_base`) that every form sends, and
that the server sets wherever it sets the settings boxes (opening a chat, a change made
elsewhere shown by `Presence.follow`) or saves what they show (a box's own save, a send):
there the boxes it saved and every box that shows the chat's value are in step, and become
the base. Nothing else changes it, so it stays what the tab last got, however long the tab
was cut off.

It holds JSON, `{"session": id, "values": {field: value as its box shows it}}`, by schema
field (`based_fields`: the form's, and the chat's title). A base of another chat (a reply
that came after the tab moved on), or none (a page served before this, an API caller), is
not known: a box is then compared with the chat's value as it shows now, as before. A
person's edit of a box in a tab that missed a change of it elsewhere is saved: they are the
last to write it.

A tab whose keep-alive starts again catches up by its base too: a box whose value changed on
the server meanwhile shows the new one, one that did not keeps what the person may be typing
there (presence.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Base", "edited", "in_step"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Base:
    """The values a tab's settings boxes last got for one chat, by schema field."""

    session_id: str
    values: Mapping[str, object] = field(default_factory=dict)

    def encode(self) -> str:
        """As the hidden box keeps it."""
        return json.dumps({"session": self.session_id, "values": dict(self.values)})

    @classmethod
    def decode(cls, raw: object) -> Base | None:
        """The base a form sent (None: it sent none, or not one of ours)."""
        if not isinstance(raw, str) or not raw:
            return None
        try:
            data: Any = json.loads(raw)
        except ValueError:
            logger.warning("a form sent a settings base that is not JSON")
            return None
        if not isinstance(data, dict):
            return None
        session, values = data.get("session"), data.get("values")
        if not isinstance(session, str) or not isinstance(values, dict):
            return None
        return cls(session, {str(name): value for name, value in values.items()})

    def of(self, session_id: str) -> Mapping[str, object]:
        """The values, if they are of that chat (else none is known)."""
        return self.values if self.session_id == session_id else {}

    def with_values(self, session_id: str, values: Mapping[str, object]) -> Base:
        """This base of `session_id` (none if it is another chat's) with `values` over it."""
        return Base(session_id, {**self.of(session_id), **values})

    @classmethod
    def updated(cls, raw: object, session_id: str, values: Mapping[str, object]) -> str:
        """The base a tab sent (`raw`, as its hidden box keeps it: none, or another chat's,
        holds nothing of `session_id`) with `values` of that chat over it, for the box."""
        known = cls.decode(raw) or cls(session_id)
        return known.with_values(session_id, values).encode()


def edited(
    typed: Mapping[str, object], base: Base | None, session_id: str, shows: Mapping[str, object]
) -> set[str]:
    """The fields of `typed` (the form's boxes) that the person changed in the tab: those
    that differ from their base, or, where the base of that chat does not have them, from
    how the chat's value shows now (`shows`; a field it lacks counts as changed)."""
    known = base.of(session_id) if base is not None else {}
    changed = set()
    for name, value in typed.items():
        was = known if name in known else shows
        if name not in was or value != was[name]:
            changed.add(name)
    return changed


def in_step(typed: Mapping[str, object], shows: Mapping[str, object]) -> dict[str, object]:
    """The fields whose box shows the chat's value as it is now (`shows`): what the tab has
    got of the chat, after a save."""
    return {
        name: shows[name] for name, value in typed.items() if name in shows and shows[name] == value
    }
