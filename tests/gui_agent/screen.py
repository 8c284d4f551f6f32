"""A small terminal screen for tests: it obeys the few controls a line editor writes.

Printable characters (wide ones take two columns) with the last column's pending wrap, CR,
LF as CR LF (the terminal's output mapping; scrolling at the bottom), backspace, tab, and
ESC [ n A/B/C/D, ESC [ J, ESC [ K; any other escape sequence is ignored. `rows` shows what
a person would see, `cursor` where.
"""

from __future__ import annotations

import re
import unicodedata

_SEQUENCE = re.compile(r"\x1b\[([0-9;?]*)([@-~])")


def _width(char: str) -> int:
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


class Screen:
    def __init__(self, columns: int, lines: int = 24) -> None:
        self.columns, self.lines = columns, lines
        self.cells = [[" "] * columns for _ in range(lines)]
        self.row = self.column = 0
        self.pending = False  # the last column was written: the next character wraps

    @property
    def rows(self) -> list[str]:
        """Each row's text without trailing blanks; trailing empty rows left out."""
        shown = ["".join(c for c in row if c != "").rstrip() for row in self.cells]
        while shown and not shown[-1]:
            shown.pop()
        return shown

    @property
    def cursor(self) -> tuple[int, int]:
        return self.row, self.column

    def feed(self, text: str) -> None:
        index = 0
        while index < len(text):
            match = _SEQUENCE.match(text, index)
            if match:
                self._control(match.group(1), match.group(2))
                index = match.end()
                continue
            self._put(text[index])
            index += 1

    def _control(self, params: str, final: str) -> None:
        count = int(params) if params.isdigit() else 1
        self.pending = False
        if final == "A":
            self.row = max(self.row - count, 0)
        elif final == "B":
            self.row = min(self.row + count, self.lines - 1)
        elif final == "C":
            self.column = min(self.column + count, self.columns - 1)
        elif final == "D":
            self.column = max(self.column - count, 0)
        elif final == "J":
            self.cells[self.row][self.column :] = [" "] * (self.columns - self.column)
            for row in range(self.row + 1, self.lines):
                self.cells[row] = [" "] * self.columns
        elif final == "K":
            self.cells[self.row][self.column :] = [" "] * (self.columns - self.column)

    def _line_feed(self) -> None:
        if self.row == self.lines - 1:
            self.cells = [*self.cells[1:], [" "] * self.columns]
        else:
            self.row += 1

    def _put(self, char: str) -> None:
        if char == "\r":
            self.column, self.pending = 0, False
        elif char == "\n":  # as a terminal's output mapping (ONLCR) turns it: CR LF
            self.column, self.pending = 0, False
            self._line_feed()
        elif char == "\b":
            self.column, self.pending = max(self.column - 1, 0), False
        elif char == "\t":
            self.column = min((self.column // 8 + 1) * 8, self.columns - 1)
        elif ord(char) < 0x20 or char == "\x1b":
            return
        else:
            width = _width(char)
            if width == 0:
                return
            if self.pending or self.column + width > self.columns:
                self.column, self.pending = 0, False
                self._line_feed()
            self.cells[self.row][self.column] = char
            if width == 2:
                self.cells[self.row][self.column + 1] = ""
            if self.column + width >= self.columns:
                self.column, self.pending = self.columns - 1, True
            else:
                self.column += width
