"""Program output written for a terminal, made into the text a terminal would show.

Code that colours its output (`\\x1b[31m`), sets a window title, or redraws a progress bar
with carriage returns writes for a terminal; a chat page, a model and a history want the
text itself. `without_escapes` removes the escape sequences, `split_escapes` does the same
to output that arrives in pieces (a sequence can be cut between two), and `overwritten`
keeps only the last drawing of a line drawn again after `\\r`.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["overwritten", "split_escapes", "terminal_view", "without_escapes"]

_SEQUENCE: Final = re.compile(
    r"""
      \x1b\[[0-?]*[ -/]*[@-~]             # CSI: colours, cursor moves, erasing
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)   # OSC: window titles, links (ended by BEL or ST)
    | \x1b[PX^_][^\x1b]*\x1b\\            # DCS, SOS, PM and APC strings
    | \x1b[ -/]*[0-OQ-WYZ\\`-~]             # the other escapes (character sets, keypad modes)
    | \x9b[0-?]*[ -/]*[@-~]               # CSI as one C1 character
    """,
    re.VERBOSE,
)

_OPEN: Final = re.compile(
    r"""
      \x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*\x1b?|[PX^_][^\x1b]*\x1b?|[ -/]*)
    | \x9b[0-?]*[ -/]*
    """,
    re.VERBOSE,
)
"""The start of a sequence whose end has not arrived yet (matched up to the text's end)."""

_STRAY: Final = re.compile("[\x1b\x9b]")

MAX_HELD: Final = 256
"""The longest unfinished sequence held back for the next piece: anything longer is not a
sequence a program meant (a title or a link is shorter) and is shown as it is, without its
escape character."""


def without_escapes(text: str) -> str:
    """`text` without terminal escape sequences; an escape character that starts none goes
    too, and so does a sequence the text ends in the middle of. What they wrapped (a
    coloured word, a link's text) stays."""
    return split_escapes(text)[0]


def overwritten(text: str) -> str:
    """`text` as a terminal shows it after carriage returns: a line drawn again after a
    `\\r` (a progress bar) shows its last drawing only, not one line per frame. A `\\r\\n`
    line ending is a line ending."""
    if "\r" not in text:
        return text
    return "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in text.split("\n"))


def terminal_view(text: str) -> str:
    """The whole output of a program as its terminal would have shown it at the end."""
    return overwritten(without_escapes(text))


def split_escapes(text: str) -> tuple[str, str]:
    """`without_escapes` for output that arrives in pieces: `(ready, held)`, where `held`
    is a sequence cut at the end of this piece (its rest is still to come). Put it in front
    of the next piece; if no more comes, it is dropped."""
    if "\x1b" not in text and "\x9b" not in text:
        return text, ""
    text = _SEQUENCE.sub("", text)
    for stray in _STRAY.finditer(text, max(0, len(text) - MAX_HELD)):
        opened = _OPEN.match(text, stray.start())
        if opened is not None and opened.end() == len(text):  # the earliest still open
            return _STRAY.sub("", text[: stray.start()]), text[stray.start() :]
    return _STRAY.sub("", text), ""
