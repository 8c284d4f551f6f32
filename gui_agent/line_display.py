"""Drawing the line being typed below what the chat writes, on a terminal that wraps.

The line (its prompt and the text typed so far) is drawn after the last row of output. Text
added at its end, the cursor there (typing, a paste coming in piece by piece), is written as
it comes, and only it is measured: a pasted line of 200,000 characters costs what each piece
adds, not the whole line again for every piece (that froze the chat, Ctrl-C with it, for
minutes). Any other change redraws the line whole: the cursor goes back to the start of that
row, everything from there down is cleared, and the row's output, the prompt and the text
are written again, wrapping as the terminal does. Output that arrives while text is typed
is written in its place and the line is drawn again below it, so what is typed is never cut
in two.

Only relative moves are used (up, carriage return, right), so rows scrolled away by the
terminal do not matter; columns are counted as terminals count them (wide characters take
two, combining marks none). `LineDisplay` makes the text to write; its owner writes it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

CLEAR_BELOW: Final = "\x1b[J"
TAB_STOP: Final = 8


def cell_width(char: str) -> int:
    """How many columns a terminal gives `char` (0 for combining marks and format controls)."""
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def place(text: str, columns: int, start: tuple[int, int] = (0, 0)) -> list[tuple[int, int]]:
    """Where the cursor is (row, column) after each prefix of `text` written from `start`
    (the start of a row by default): entry i is after `text[:i]`. A column equal to
    `columns` is the last column's "pending wrap": the next character goes to the next row."""
    row, column = start
    spots = [start]
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
    row, when it ends on the last column: the cursor waits there). Only what follows the
    last line break is measured: a line break starts a row afresh."""
    text = text.rpartition("\n")[2]
    spots = place(text, columns)
    row = spots[-1][0]
    start = len(text)
    while start > 0 and spots[start][0] == row:
        start -= 1
    return text[start:]


def cursor_spot(text: str, index: int, columns: int) -> tuple[int, int]:
    """Where the cursor shows when it stands before `text[index]` (or at the end): on the
    character itself, even when the character wrapped to the next row."""
    return _spot_of(text, index, place(text[: index + 1], columns), columns)


def _spot_of(text: str, index: int, spots: list[tuple[int, int]], columns: int) -> tuple[int, int]:
    """`cursor_spot`, given where the cursor is after each prefix of `text` (`place`), up to
    `text[: index + 1]` at least."""
    if index >= len(text):
        return spots[len(text)]
    width = cell_width(text[index])
    if text[index] not in "\t\n" and width:
        row, column = spots[index + 1]
        return row, column - width
    row, column = spots[index]
    return (row + 1, 0) if column >= columns else (row, column)


@dataclass(frozen=True, slots=True)
class _Tail:
    """The line as drawn last, when the cursor was left at its end: `text` after `before`
    (the lead and the prompt), at `columns`, ending at `end` (row, column; counted from the
    row the line starts on). Text added to it is written after it as it is
    (`LineDisplay.edit`)."""

    before: str
    text: str
    columns: int
    end: tuple[int, int]


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
    _tail: _Tail | None = field(default=None, repr=False)

    @property
    def shown(self) -> bool:
        """Whether a prompt or typed text is on screen (else output just goes on)."""
        return bool(self.prompt or self.text)

    def edit(self, text: str, cursor: int) -> str:
        """The line now reads `text`, with the cursor before `text[cursor]`. Text added at
        the end of the line as drawn, the cursor at the end before and after, is only
        written after it; anything else redraws the line."""
        added = self._added(text) if cursor == len(text) else None
        self.text, self.cursor = text, cursor
        if added is not None:
            return self._append(added)
        return self._draw(self._to_start() + CLEAR_BELOW + self.lead)

    def redraw(self, text: str, cursor: int) -> str:
        """`edit`, drawing the line whole even where it is drawn already: the terminal may
        show something else now (the shell had it while the chat was stopped)."""
        self._tail = None
        return self.edit(text, cursor)

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
            self._tail = None  # the line starts on another row now

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
        is written next goes on after that. A line drawn with the cursor at its end is
        shown whole already: only what was added since is written before `ending`."""
        added = self._added(self.text)
        if added is None:
            written = self._to_start() + CLEAR_BELOW + self.lead
            shown = self.prompt + self.text
        else:  # (the lead is the row's output before the prompt: it is written already)
            written, shown = "", added
            self.lead += self.prompt + self.text[: len(self.text) - len(added)]
        self.prompt, self.text, self.cursor = "", "", 0
        return written + self._after_lead(shown + ending)

    def _added(self, text: str) -> str | None:
        """What `text` adds to the line as drawn last, when it was drawn with the cursor at
        its end, at the terminal's width now, and `text` goes on from it; else None."""
        tail = self._tail
        if (
            tail is None
            or tail.before != self.lead + self.prompt
            or tail.columns != self.columns()
            or not text.startswith(tail.text)
        ):
            return None
        return text[len(tail.text) :]

    def _append(self, added: str) -> str:
        """`added` written at the end of the line, where the cursor is: only it is placed."""
        tail = self._tail
        assert tail is not None  # (`_added` found it)
        end = place(added, tail.columns, tail.end)[-1]
        self._tail = _Tail(tail.before, self.text, tail.columns, end)
        self.row = end[0]
        return added

    def _after_lead(self, text: str) -> str:
        """`text` written after the lead (the cursor is there): its last row is the new lead."""
        self.lead, self.row = last_row(self.lead + text, self.columns()), 0
        self._tail = None  # the line is not drawn: it starts after `text`
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
        spots = place(whole, columns)
        end = spots[-1]  # on a full row, the cursor waits on its last column
        row, column = _spot_of(whole, len(before) + self.cursor, spots, columns)
        if (row, column) != end:
            written += f"\x1b[{end[0] - row}A" if end[0] > row else ""
            written += "\r" + (f"\x1b[{column}C" if column else "")
        self.row = row
        at_end = self.cursor == len(self.text)
        self._tail = _Tail(before, self.text, columns, end) if at_end else None
        return written
