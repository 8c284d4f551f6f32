"""A running call's output as the terminal chat shows it while it comes: a row at a time,
each after a mark, and a row drawn again after `\\r` (a progress bar) as its latest drawing.

The terminal chat shows no control character a tool prints (`cli.printable`: output must not
move the cursor over what the chat shows, an approval's code among it), so a bar's frames
used to run together on one growing row ("10%20%30%…"). Here a row that is drawn again is
shown as its latest drawing on a row of its own, at most every `REDRAW_EVERY_S` seconds,
and its last drawing once it ends (or the call does): a bar of a hundred frames takes a few
rows, and the last one says where it ended, as the chat page's does.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Final

__all__ = ["REDRAW_EVERY_S", "OutputRows"]

REDRAW_EVERY_S: Final = 2.0
"""How often a row being drawn again shows its latest drawing."""

_BREAKS: Final = re.compile(r"\r\n|\n|\r")


class OutputRows:
    """What to show of one call's output, piece by piece (`show`), each row after `mark`."""

    __slots__ = ("_at", "_clock", "_drawing", "_every_s", "_fresh", "_redrawn", "_shown", "mark")

    def __init__(
        self,
        mark: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        every_s: float = REDRAW_EVERY_S,
    ) -> None:
        self.mark = mark
        self._clock = clock
        self._every_s = every_s
        self._drawing = ""
        """The open row as a terminal would show it now (its latest drawing)."""
        self._redrawn = False
        """The open row was drawn again (a `\\r`): its drawings are shown on rows of their own."""
        self._fresh = False
        """A `\\r` came: the next text starts the row's next drawing."""
        self._shown: str | None = None
        """The drawing of the open row shown last (None: nothing of it shown yet)."""
        self._at = float("-inf")
        """When the open row was last shown."""

    @property
    def ended(self) -> bool:
        """Whether what was shown ends its row (the next output starts a row)."""
        return self._shown is None

    def show(self, text: str) -> str:
        """What to write for the next piece of output."""
        out: list[str] = []
        at = 0
        for found in _BREAKS.finditer(text):
            self._text(text[at : found.start()], out)
            if found.group() == "\r":
                self._redrawn = self._fresh = True
            else:
                self._end_row(out)
            at = found.end()
        self._text(text[at:], out)
        return "".join(out)

    def flush(self) -> str:
        """The open row's latest drawing, if it was not shown (the call ended): to write
        before what the call's end says."""
        if self._redrawn and self._drawing and self._drawing != self._shown:
            return self._row(self._drawing)
        return ""

    def _text(self, piece: str, out: list[str]) -> None:
        if not piece:
            return
        if not self._redrawn:
            out.append(piece if self._shown is not None else self.mark + piece)
            self._drawing += piece
            self._shown = self._drawing
            self._at = self._clock()
            return
        self._drawing = piece if self._fresh else self._drawing + piece
        self._fresh = False
        now = self._clock()
        if now - self._at >= self._every_s and self._drawing != self._shown:
            out.append(self._row(self._drawing))
            self._at = now

    def _row(self, drawing: str) -> str:
        """`drawing` on a row of its own, after what was shown (which it ends)."""
        written = ("" if self._shown is None else "\n") + self.mark + drawing
        self._shown = drawing
        return written

    def _end_row(self, out: list[str]) -> None:
        if self._redrawn and self._drawing != self._shown:
            out.append(self._row(self._drawing))
        elif self._shown is None:  # (an empty row keeps its mark)
            out.append(self.mark)
        out.append("\n")
        self._drawing, self._shown = "", None
        self._redrawn = self._fresh = False
        self._at = float("-inf")
