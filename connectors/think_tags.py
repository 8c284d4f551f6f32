"""Reasoning a model writes inside ``<think>…</think>`` at the start of its answer.

Servers that do not parse reasoning out of the text themselves (vLLM without a reasoning
parser, Together's and Groq's ``raw`` reasoning format, older LM Studio and Ollama builds,
llama.cpp with ``--reasoning-format none``) send a reasoning model's thinking (DeepSeek-R1,
Qwen3, QwQ) as part of the content: ``<think>\\nLet me see…</think>\\n\\nThe answer is 4.``
Shown as it is, the person reads the model's scratch work as its answer, tags and all, and
it goes back to the model in the history as if it were the answer.

`ThinkTags` splits such content as it streams: a ``<think>`` that opens the content (after
blank space) starts reasoning, ``</think>`` ends it, and the blank space after it is
dropped, as is the blank space that opens the reasoning. Tags split over several pieces
are recognised (at most the length of a tag is held back). Content that does not begin
with ``<think>`` is text, untouched, and a tag later in the text stays text (a model
writing about the tag). Pure; no I/O.
"""

from __future__ import annotations

from enum import Enum

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


class _State(Enum):
    START = "start"  # nothing but blank space seen yet
    THINKING = "thinking"  # inside <think>
    AFTER = "after"  # just after </think>: blank space is dropped
    TEXT = "text"  # the answer: everything passes through


Piece = tuple[bool, str]
"""A piece of the content: (whether it is reasoning, its text)."""


class ThinkTags:
    """Splits streamed content into reasoning (inside a leading ``<think>``) and text."""

    def __init__(self) -> None:
        self._state = _State.START
        self._held = ""
        self._fresh = True

    def feed(self, piece: str) -> list[Piece]:
        """The reasoning and text pieces `piece` completes, in order (maybe none yet)."""
        if self._state is _State.TEXT:
            return [(False, piece)] if piece else []
        if self._state is _State.START:
            return self._start(self._held + piece)
        if self._state is _State.THINKING:
            return self._thinking(self._held + piece)
        return self._after(piece)

    def finish(self) -> list[Piece]:
        """What is still held back at the end of the content: a partial opening tag (or
        blank space) is text, a partial closing tag inside reasoning is reasoning."""
        held, self._held = self._held, ""
        if not held:
            return []
        return [(self._state is _State.THINKING, held)]

    def _start(self, buffer: str) -> list[Piece]:
        begun = buffer.lstrip()
        if begun.startswith(OPEN_TAG):
            self._state, self._held = _State.THINKING, ""
            return self._thinking(begun[len(OPEN_TAG) :])
        if OPEN_TAG.startswith(begun):  # blank space, or the start of the tag so far
            self._held = buffer
            return []
        self._state, self._held = _State.TEXT, ""
        return [(False, buffer)]

    def _thinking(self, buffer: str) -> list[Piece]:
        if self._fresh:  # the blank line after <think> is no part of the reasoning
            buffer = buffer.lstrip()
            if not buffer:
                return []
            self._fresh = False
        end = buffer.find(CLOSE_TAG)
        if end >= 0:
            self._state, self._held = _State.AFTER, ""
            out: list[Piece] = [(True, buffer[:end])] if end else []
            return out + self._after(buffer[end + len(CLOSE_TAG) :])
        keep = _partial_tag_at_end(buffer, CLOSE_TAG)
        self._held = buffer[len(buffer) - keep :] if keep else ""
        shown = buffer[: len(buffer) - keep]
        return [(True, shown)] if shown else []

    def _after(self, piece: str) -> list[Piece]:
        text = piece.lstrip()
        if not text:
            return []
        self._state = _State.TEXT
        return [(False, text)]


def _partial_tag_at_end(text: str, tag: str) -> int:
    """How many characters at the end of `text` could be the start of `tag` (0 if none)."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0
