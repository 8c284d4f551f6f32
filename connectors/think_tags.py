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

Some chat templates open the ``<think>`` themselves, at the end of the prompt (Qwen3's
thinking models, the DeepSeek-R1 distills, QwQ): the content then starts inside the
reasoning, without the tag, and only ``</think>`` says where it ended. Streamed, that
cannot be known before the tag comes; `template_thinking` finds it in a whole reply (a
``</think>`` that ends a line, with no ``<think>`` before it), and ``ThinkTags(opened=True)``
splits the replies of a model known to do this as they stream.
"""

from __future__ import annotations

import re
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
    """Splits streamed content into reasoning (inside a leading ``<think>``) and text.

    `opened`: the chat template opened the ``<think>`` (see the module docstring), so the
    content starts as reasoning (a ``<think>`` the model writes anyway is dropped).
    """

    def __init__(self, *, opened: bool = False) -> None:
        self._state = _State.START
        self._held = ""
        self._fresh = True
        self._opened = opened
        self.closed = False
        """True once a ``</think>`` ended the reasoning."""

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
        if self._opened:
            self._state, self._held = _State.THINKING, ""
            return self._thinking(buffer)
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
            self._state, self._held, self.closed = _State.AFTER, "", True
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


_TEMPLATE_CLOSE = re.compile(re.escape(CLOSE_TAG) + r"[ \t]*(?:\r?\n|$)")


def template_thinking(text: str) -> tuple[str, str] | None:
    """``(reasoning, answer)`` of a whole reply whose thinking the chat template opened:
    split at its first ``</think>`` when that ends a line and no ``<think>`` comes before
    it; None for any other text (a tag in a sentence, or in code, stays text)."""
    match = _TEMPLATE_CLOSE.search(text)
    if match is None or OPEN_TAG in text[: match.start()]:
        return None
    return text[: match.start()].strip(), text[match.end() :].lstrip()


def _partial_tag_at_end(text: str, tag: str) -> int:
    """How many characters at the end of `text` could be the start of `tag` (0 if none)."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0
