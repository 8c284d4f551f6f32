"""Editing one line of input as terminals do: the keys, the line and its cursor, the history.

Pure: nothing here reads or writes the terminal. `KeyDecoder` turns what a terminal sends
for each key (text with escape sequences, cut anywhere between two reads) into `Key`s and
typed text; `LineEditor` applies them to the line and keeps the lines it is told to
remember, for Up and Down.
"""

from __future__ import annotations

import enum
from typing import Final

from gui_agent.cli import ReadEnd


class Key(enum.Enum):
    """What a key (or a control character, or an escape sequence) asks of the line."""

    LEFT = "left"
    RIGHT = "right"
    HOME = "home"
    END = "end"
    WORD_LEFT = "word left"
    WORD_RIGHT = "word right"
    UP = "up"
    DOWN = "down"
    BACKSPACE = "backspace"
    DELETE = "delete"
    CTRL_D = "ctrl-d"  # end of input on an empty line, else delete
    KILL_TO_END = "kill to end"
    KILL_TO_START = "kill to start"
    KILL_WORD = "kill word"
    ENTER = "enter"


ESC: Final = "\x1b"

_CONTROL_KEYS: Final[dict[str, Key]] = {
    "\x01": Key.HOME,  # Ctrl-A
    "\x02": Key.LEFT,  # Ctrl-B
    "\x04": Key.CTRL_D,
    "\x05": Key.END,  # Ctrl-E
    "\x06": Key.RIGHT,  # Ctrl-F
    "\x08": Key.BACKSPACE,  # Ctrl-H
    "\x7f": Key.BACKSPACE,
    "\x0b": Key.KILL_TO_END,  # Ctrl-K
    "\x0e": Key.DOWN,  # Ctrl-N
    "\x10": Key.UP,  # Ctrl-P
    "\x15": Key.KILL_TO_START,  # Ctrl-U
    "\x17": Key.KILL_WORD,  # Ctrl-W
    "\r": Key.ENTER,
    "\n": Key.ENTER,
}

# ESC [ ... FINAL and ESC O FINAL (the keypad's "application" form) for the cursor keys
_FINALS: Final[dict[str, Key]] = {
    "A": Key.UP,
    "B": Key.DOWN,
    "C": Key.RIGHT,
    "D": Key.LEFT,
    "H": Key.HOME,
    "F": Key.END,
}
_TILDE_CODES: Final[dict[str, Key]] = {
    "1": Key.HOME,
    "7": Key.HOME,
    "4": Key.END,
    "8": Key.END,
    "3": Key.DELETE,
}
_WORD_MOVES: Final[dict[str, Key]] = {"C": Key.WORD_RIGHT, "D": Key.WORD_LEFT}
_WORD_MODIFIERS: Final = frozenset({"3", "5"})  # Alt, Ctrl: Ctrl-Left is ESC [ 1 ; 5 D
_ALT_KEYS: Final[dict[str, Key]] = {"b": Key.WORD_LEFT, "f": Key.WORD_RIGHT, "\x7f": Key.KILL_WORD}


def _typed(char: str) -> bool:
    """Whether `char` is text to insert: a tab or a character that is not a control."""
    code = ord(char)
    return char == "\t" or (code >= 0x20 and code != 0x7F and not 0x80 <= code < 0xA0)


def _escape(data: str, start: int) -> tuple[int, Key | None] | None:
    """The escape sequence at `data[start]` (an ESC): where it ends and the key it is (None
    for one without a meaning here); None when `data` ends inside it."""
    if start + 1 >= len(data):
        return None
    kind = data[start + 1]
    if kind == "[":
        end = start + 2
        while end < len(data) and 0x20 <= ord(data[end]) <= 0x3F:  # parameters
            end += 1
        if end >= len(data):
            return None
        final, params = data[end], data[start + 2 : end].split(";")
        if not 0x40 <= ord(final) <= 0x7E:  # not a sequence after all: drop the ESC [
            return end, None
        if final == "~":
            return end + 1, _TILDE_CODES.get(params[0])
        if final in _WORD_MOVES and len(params) == 2 and params[1] in _WORD_MODIFIERS:
            return end + 1, _WORD_MOVES[final]
        return end + 1, _FINALS.get(final)
    if kind == "O":
        if start + 2 >= len(data):
            return None
        return start + 3, _FINALS.get(data[start + 2])
    if kind in _ALT_KEYS:
        return start + 2, _ALT_KEYS[kind]
    return start + 1, None  # a lone Esc: the key after it counts as itself


class KeyDecoder:
    """Splits what the terminal sends into typed text and keys, keeping an escape sequence
    cut between two reads until its end arrives."""

    def __init__(self) -> None:
        self._pending = ""
        self._after_cr = False  # a line feed right after a carriage return is the same Enter

    def feed(self, text: str) -> list[str | Key]:
        """The keys and runs of typed text in `text`, in order."""
        data, self._pending = self._pending + text, ""
        keys: list[str | Key] = []
        run: list[str] = []
        index = 0
        while index < len(data):
            char = data[index]
            after_cr, self._after_cr = self._after_cr, char == "\r"
            if _typed(char):
                run.append(char)
                index += 1
                continue
            if run:
                keys.append("".join(run))
                run.clear()
            if char == ESC:
                found = _escape(data, index)
                if found is None:
                    self._pending = data[index:]
                    break
                index, key = found
            else:
                index += 1
                key = None if char == "\n" and after_cr else _CONTROL_KEYS.get(char)
            if key is not None:
                keys.append(key)
        if run:
            keys.append("".join(run))
        return keys


HISTORY_SIZE: Final = 1000
"""How many remembered lines Up can bring back; the oldest go first."""


class LineEditor:
    """The line being typed and the cursor in it, with the lines remembered before.

    Up and Down walk the remembered lines; the line being typed when Up was first pressed
    comes back below the newest. What is entered is not remembered by itself: the chat
    remembers the lines it takes as messages or commands (`remember`), not answers.
    """

    def __init__(self, history_size: int = HISTORY_SIZE) -> None:
        self.text = ""
        self.cursor = 0
        self._history: list[str] = []
        self._size = history_size
        self._at = 0  # the remembered line shown; len(self._history): the line being typed
        self._draft = ""

    @property
    def history(self) -> tuple[str, ...]:
        return tuple(self._history)

    def remember(self, line: str) -> None:
        """Keep `line` for Up (not a blank one, nor the newest again)."""
        if not line.strip() or (self._history and self._history[-1] == line):
            return
        typing = self._at == len(self._history)
        self._history.append(line)
        if len(self._history) > self._size:
            del self._history[0]
            self._at = max(self._at - 1, 0)
        if typing:
            self._at = len(self._history)

    def clear(self) -> None:
        """Drop what is typed (Ctrl-C); the next Up starts from the newest line again."""
        self._set("")
        self._at, self._draft = len(self._history), ""

    def take(self) -> str:
        """Take what is typed out of the line, leaving it empty (a question is asked: its
        answer must start from nothing); `put_back` gives it back afterwards."""
        text = self.text
        self.clear()
        return text

    def put_back(self, text: str) -> None:
        """Put `text`, taken out by `take`, back at the start of the line; what was typed
        meanwhile stays after it, the cursor where it was in that."""
        self.text, self.cursor = text + self.text, len(text) + self.cursor

    def press(self, key: str | Key) -> str | ReadEnd | None:
        """Apply typed text or a key; the line when Enter ends it, ReadEnd.EOF for Ctrl-D
        on an empty line, else None."""
        if isinstance(key, str):
            self.text = self.text[: self.cursor] + key + self.text[self.cursor :]
            self.cursor += len(key)
        elif key is Key.ENTER:
            line = self.text
            self.clear()
            return line
        elif key is Key.CTRL_D and not self.text:
            return ReadEnd.EOF
        elif key in (Key.UP, Key.DOWN):
            self._walk(-1 if key is Key.UP else 1)
        else:
            self._edit(key)
        return None

    def _edit(self, key: Key) -> None:
        text, cursor = self.text, self.cursor
        if key is Key.LEFT:
            self.cursor = max(cursor - 1, 0)
        elif key is Key.RIGHT:
            self.cursor = min(cursor + 1, len(text))
        elif key is Key.HOME:
            self.cursor = 0
        elif key is Key.END:
            self.cursor = len(text)
        elif key is Key.WORD_LEFT:
            self.cursor = _word_start(text, cursor)
        elif key is Key.WORD_RIGHT:
            self.cursor = _word_end(text, cursor)
        elif key is Key.BACKSPACE and cursor > 0:
            self.text, self.cursor = text[: cursor - 1] + text[cursor:], cursor - 1
        elif key in (Key.DELETE, Key.CTRL_D):
            self.text = text[:cursor] + text[cursor + 1 :]
        elif key is Key.KILL_TO_END:
            self.text = text[:cursor]
        elif key is Key.KILL_TO_START:
            self.text, self.cursor = text[cursor:], 0
        elif key is Key.KILL_WORD:
            start = _word_start(text, cursor)
            self.text, self.cursor = text[:start] + text[cursor:], start

    def _walk(self, step: int) -> None:
        target = self._at + step
        if not 0 <= target <= len(self._history):
            return
        if self._at == len(self._history):
            self._draft = self.text
        self._at = target
        self._set(self._history[target] if target < len(self._history) else self._draft)

    def _set(self, text: str) -> None:
        self.text, self.cursor = text, len(text)


def _word_start(text: str, cursor: int) -> int:
    """Where the word before `cursor` starts (spaces before the cursor are skipped)."""
    index = cursor
    while index > 0 and text[index - 1].isspace():
        index -= 1
    while index > 0 and not text[index - 1].isspace():
        index -= 1
    return index


def _word_end(text: str, cursor: int) -> int:
    """Where the word after `cursor` ends."""
    index = cursor
    while index < len(text) and text[index].isspace():
        index += 1
    while index < len(text) and not text[index].isspace():
        index += 1
    return index
