"""The chatbot's messages as a view keeps them: in order and by key, each anchored to the
history message it belongs to (so a truncation knows what to keep), each rendered once into
Gradio's message form until it changes. Pure; the base of `ChatView` (renderer.py).

Gradio draws consecutive messages of one role in one bubble (`group_consecutive_messages`):
a turn's reply, its tool steps and notes read as one. Each message of the person's begins a
bubble all the same, and a line that stands alone (an agent switch) is a bubble of its own:
a message of the other role that the page does not draw (`GAP`, hidden by app.css) goes
between two messages of one role that are not to share a bubble (`apart`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["GAP", "ChatEntries", "ChatbotMessage", "Entry", "apart"]

ChatbotMessage = dict[str, Any]
"""One chatbot message in Gradio 6's normalized `messages` form, which is both a valid
Chatbot value and exactly what the browser receives, so a streaming handler can skip
Gradio's postprocessing: {"role", "metadata" (dict or None), "content": [{"text", "type":
"text"}], "options": None}."""

GAP = '<span class="ga-gap"></span>'
"""The text of a message the page does not draw (app.css hides its row): it only parts two
messages of one role that Gradio would otherwise draw in one bubble (`apart`)."""

Role = Literal["user", "assistant"]


@dataclass(slots=True, eq=False)
class Entry:
    """One chatbot message. `anchor`: the history index it belongs to (for truncation)."""

    key: str
    role: Role
    anchor: int
    text: str = ""
    metadata: dict[str, Any] | None = None
    transient: bool = False
    cache: ChatbotMessage | None = None
    alone: bool = False
    """Drawn in a bubble of its own (an agent switch: not at the end of the reply before
    it, nor atop the next speaker's), not in one with the messages of its role around it
    (`apart`)."""

    def set(self, text: str | None = None, **metadata: Any) -> None:
        if text is not None:
            self.text = text
        if metadata:
            self.metadata = {**(self.metadata or {}), **metadata}
        self.cache = None

    def render(self) -> ChatbotMessage:
        if self.cache is None:
            self.cache = {
                "role": self.role,
                "metadata": dict(self.metadata) if self.metadata else None,
                "content": [{"text": self.text, "type": "text"}],
                "options": None,
            }
        return self.cache


class ChatEntries:
    """A view's chatbot messages, and the history messages they are anchored to."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._by_key: dict[str, Entry] = {}
        self._history: list[str] = []
        self._serial = 0
        self.version = 0
        """Bumped on every visible change: compare to know whether to send the chatbot."""

    def messages(self, then: Iterable[ChatbotMessage] = ()) -> list[ChatbotMessage]:
        """The chatbot value (a fresh list; unchanged messages are reused, not rebuilt),
        followed by `then` (the person's messages waiting in the queue), each message of
        the person's and each entry that stands alone in a bubble of its own (`apart`)."""
        shown = [(entry.render(), entry.alone) for entry in self._entries]
        shown.extend((message, False) for message in then)
        return apart(shown)

    @property
    def size(self) -> int:
        """How many chatbot messages the view shows."""
        return len(self._entries)

    def _tail(self) -> int:
        """The anchor of what comes after the history shown so far (its length)."""
        return len(self._history)

    def _append(self, entry: Entry, *, before: str | None = None) -> Entry:
        self._by_key[entry.key] = entry
        target = self._by_key.get(before) if before else None
        if target is not None and target is not entry:
            self._entries.insert(self._entries.index(target), entry)
        else:
            self._entries.append(entry)
        self.version += 1
        return entry

    def _remove(self, key: str) -> None:
        entry = self._by_key.pop(key, None)
        if entry is not None:
            self._entries.remove(entry)
            self.version += 1

    def _transient_key(self, kind: str) -> str:
        """A key of its own for an entry that is no history message (a note, a switch)."""
        self._serial += 1
        return f"{kind}:{self._serial}"

    def _note(self, text: str) -> str:
        """A line of its own (trusted Markdown) after the history shown so far; its key."""
        entry = self._append(
            Entry(self._transient_key("note"), "assistant", self._tail(), text, transient=True)
        )
        return entry.key


def apart(shown: Iterable[tuple[ChatbotMessage, bool]]) -> list[ChatbotMessage]:
    """The messages (each with whether it stands alone) with a `GAP` of the other role
    between two of one role where Gradio is not to draw them in one bubble: before each
    message of the person's, and before and after each one that stands alone. Without it
    two messages of the person's in a row (sent while the agent worked) were drawn as one
    bubble, and a switch of role at the end of the reply before it."""
    out: list[ChatbotMessage] = []
    before: str | None = None
    alone_before = False
    for message, alone in shown:
        role = str(message["role"])
        if role == before and (alone or alone_before or role == "user"):
            out.append(_gap("assistant" if role == "user" else "user"))
        out.append(message)
        before, alone_before = role, alone
    return out


def _gap(role: Role) -> ChatbotMessage:
    return {
        "role": role,
        "metadata": None,
        "content": [{"text": GAP, "type": "text"}],
        "options": None,
    }
