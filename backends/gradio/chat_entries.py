"""The chatbot's messages as a view keeps them: in order and by key, each anchored to the
history message it belongs to (so a truncation knows what to keep), each rendered once into
Gradio's message form until it changes. Pure; the base of `ChatView` (renderer.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ChatEntries", "ChatbotMessage", "Entry"]

ChatbotMessage = dict[str, Any]
"""One chatbot message in Gradio 6's normalized `messages` form, which is both a valid
Chatbot value and exactly what the browser receives, so a streaming handler can skip
Gradio's postprocessing: {"role", "metadata" (dict or None), "content": [{"text", "type":
"text"}], "options": None}."""


@dataclass(slots=True, eq=False)
class Entry:
    """One chatbot message. `anchor`: the history index it belongs to (for truncation)."""

    key: str
    role: Literal["user", "assistant"]
    anchor: int
    text: str = ""
    metadata: dict[str, Any] | None = None
    transient: bool = False
    cache: ChatbotMessage | None = None

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

    def messages(self) -> list[ChatbotMessage]:
        """The chatbot value (a fresh list; unchanged messages are reused, not rebuilt)."""
        return [entry.render() for entry in self._entries]

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
