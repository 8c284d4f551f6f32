"""Text the connectors did not write, made fit for one log line.

Model names (from a config file, the environment or a local server's listing), base URLs,
the provider names built from them, and what a server or an interpreter said are logged
through `loggable`: a newline in one would start a log line of its own (a forged record),
a terminal escape would rewrite what a person reads on the console.
"""

from __future__ import annotations

__all__ = ["loggable"]


def loggable(text: object) -> str:
    """`text` fit for one log line: as it is when every character in it is printable, else
    with each that is not (a newline, an escape sequence's ESC, a line separator) written
    as its escape (``\\n``, ``\\x1b``, ``\\u2028``)."""
    shown = str(text)
    if shown.isprintable():
        return shown
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in shown
    )
