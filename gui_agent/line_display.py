"""Drawing the line being typed below what the chat writes, on a terminal that wraps.

The line (its prompt and the text typed so far) is drawn after the last row of output, and
redrawn whole after every key: the cursor goes back to the start of that row, everything
from there down is cleared, and the row's output, the prompt and the text are written again,
wrapping as the terminal does. Output that arrives while text is typed is written in its
place and the line is drawn again below it, so what is typed is never cut in two.

Only relative moves are used (up, carriage return, right), so rows scrolled away by the
terminal do not matter; columns are counted as terminals count them (wide characters take
two, combining marks none). `LineDisplay` makes the text to write; its owner writes it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

CLEAR_BELOW: Final = "\x1b[J"
TAB_STOP: Final = 8


def cell_width(char: str) -> int:
    """How many columns a terminal gives `char` (0 for combining marks and format controls)."""
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def place(text: str, columns: int) -> list[tuple[int, int]]:
    """Where the cursor is (row, column) after each prefix of `text` written from the start
    of a row: entry i is after `text[:i]`. A column equal to `columns` is the last column's
    "pending wrap": the next character goes to the next row."""
    row = column = 0
    spots = [(0, 0)]
    for char in text:
        if char == "\n":
            row, column = row + 1, 0
        elif char == "\t":
            if column >= columns:
                row, column = row + 1, 0
            column = min((column // TAB_STOP + 1) * TAB_STOP, columns - 1)
        else:
            width = cell_width(char)
            if column + width > columns:  # a full row, or a wide character that does not fit
                row, column = row + 1, 0
            column += width
        spots.append((row, column))
    return spots


def last_row(text: str, columns: int) -> str:
    """The part of `text` on the row it ends on, once written from a row's start (a full
    row, when it ends on the last column: the cursor waits there)."""
    spots = place(text, columns)
    row = spots[-1][0]
    start = len(text)
    while start > 0 and text[start - 1] != "\n" and spots[start][0] == row:
        start -= 1
    return text[start:]


def cursor_spot(text: str, index: int, columns: int) -> tuple[int, int]:
    """Where the cursor shows when it stands before `text[index]` (or at the end): on the
    character itself, even when the character wrapped to the next row."""
    if index >= len(text):
        return place(text, columns)[-1]
    spots = place(text[: index + 1], columns)
    width = cell_width(text[index])
    if text[index] not in "\t\n" and width:
        row, column = spots[index + 1]
        return row, column - width
    row, column = spots[index]
    return (row + 1, 0) if column >= columns else (row, column)


@dataclass
class LineDisplay:
    """The bottom of the terminal: the row output left unfinished (`lead`), then the prompt
    and the line being typed. Every method returns what to write to show the change.

    `columns` tells the terminal's width, asked afresh each time (windows are resized).
    """

    columns: Callable[[], int]
    lead: str = ""  # the output on the row where the line starts
    prompt: str = ""
    text: str = ""
    cursor: int = 0
    row: int = 0  # the cursor's row, counted from the row the line starts on

    @property
    def shown(self) -> bool:
        """Whether a prompt or typed text is on screen (else output just goes on)."""
        return bool(self.prompt or self.text)

    def edit(self, text: str, cursor: int) -> str:
        """The line now reads `text`, with the cursor before `text[cursor]`."""
        self.text, self.cursor = text, cursor
        return self._draw(self._to_start() + CLEAR_BELOW + self.lead)

    def ask(self, prompt: str) -> str:
        """Show `prompt` before the line. What it starts with, up to its last line break, is
        written as output; only its last row stays with the line."""
        self.settle()
        head, newline, tail = prompt.rpartition("\n")
        written = self.output(head + newline)
        self.prompt = tail
        return written + (self.edit(self.text, self.cursor) if self.shown else "")

    def settle(self) -> None:
        """Leave the prompt where it is, as output: what is written next goes on after it,
        and the line starts after it."""
        if self.prompt:
            columns = self.columns()
            self.row -= place(self.lead + self.prompt, columns)[-1][0]
            self.lead = last_row(self.lead + self.prompt, columns)
            self.prompt = ""

    def output(self, text: str) -> str:
        """Write `text` (already made printable). With text typed, the line is taken away
        first and drawn again below it; a prompt alone stays where it is, before `text`."""
        if not text:
            return ""
        if not self.text:
            self.settle()
            return self._after_lead(text)
        written = self._to_start() + CLEAR_BELOW + self.lead + self._after_lead(text)
        return self._draw(written)

    def above(self, text: str) -> str:
        """Write `text` (already printable: a log record) on rows of its own. The bottom of
        the terminal (the unfinished row of output, the prompt and the typed text) is taken
        away and drawn again below it as it was, the cursor where it stood: what is typed is
        neither cut in two nor lost, and the output row goes on below."""
        if not text:
            return ""
        ending = "" if text.endswith("\n") else "\n"
        return self._draw(self._to_start() + CLEAR_BELOW + text + ending + self.lead)

    def take_back(self, echo: str) -> str:
        """Erase `echo`: what the terminal itself showed of keys typed before the line was
        edited here, written from the start of the row the line starts on. Those keys are
        then typed into the line (`edit`), so they show once, where they can be edited."""
        if not echo:
            return ""
        rows = place(echo, self.columns())[-1][0]
        return (f"\x1b[{rows}A" if rows else "") + "\r" + CLEAR_BELOW

    def finish(self, ending: str) -> str:
        """Show the line whole, then `ending` (`\\n` for Enter, `^C` when it is dropped); what
        is written next goes on after that."""
        written = self._to_start() + CLEAR_BELOW + self.lead
        self.prompt, text, self.text, self.cursor = "", self.prompt + self.text, "", 0
        return written + self._after_lead(text + ending)

    def _after_lead(self, text: str) -> str:
        """`text` written after the lead (the cursor is there): its last row is the new lead."""
        self.lead, self.row = last_row(self.lead + text, self.columns()), 0
        return text

    def _to_start(self) -> str:
        """Back to the first column of the row the line starts on."""
        return (f"\x1b[{self.row}A" if self.row > 0 else "") + "\r"

    def _draw(self, written: str) -> str:
        """`written` (which leaves the cursor after the lead), then the prompt and the line,
        and the cursor moved to its place in the line."""
        columns = self.columns()
        before = self.lead + self.prompt
        whole = before + self.text
        written += self.prompt + self.text
        end = place(whole, columns)[-1]  # on a full row, the cursor waits on its last column
        row, column = cursor_spot(whole, len(before) + self.cursor, columns)
        if (row, column) != end:
            written += f"\x1b[{end[0] - row}A" if end[0] > row else ""
            written += "\r" + (f"\x1b[{column}C" if column else "")
        self.row = row
        return written
