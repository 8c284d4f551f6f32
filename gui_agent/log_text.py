"""Text GuiAgent did not write, made fit for one log line.

What a model server or a tool said, a file name, a chat title, a model or user name, and
the message of an exception that quotes any of them are logged through these functions: a
newline in one would start a log line of its own (a forged record), a terminal escape would
rewrite what a person reads on the console.

An exception is logged one of two ways. One GuiAgent raises on purpose (`GuiAgentError`: a
model that failed, a request refused) says all there is to say in its type and message, so
`loggable_error` writes those. Any other is a bug somewhere, worth its traceback; but a
traceback repeats the exception's message (and those of its causes) as it is, so it is not
handed to `logging` through `exc_info`: `loggable_traceback` formats it and writes it
escaped: the record stays on one line, the traceback's own line breaks written ``\\n``.
`loggable_failure` picks between the two. The traceback keeps the one line it ends with
(`LoggedTraceback.error`): where a person reads the log among other things (the terminal
chat, `repl_logging`), a record says that line, and the traceback is left to a log of its
own or to DEBUG.

Here rather than in `connectors/` because the core logs such text too, and the core imports
only `schema`, never the connectors; `connectors.log_text.loggable` is this same function.
"""

from __future__ import annotations

import traceback

from gui_agent.exceptions import GuiAgentError

__all__ = [
    "LoggedTraceback",
    "loggable",
    "loggable_error",
    "loggable_failure",
    "loggable_traceback",
]


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


def loggable_error(error: BaseException) -> str:
    """ "TypeName: message" of `error`, escaped (just the type name when it has no message),
    without a traceback."""
    words = str(error)
    return loggable(f"{type(error).__name__}: {words}" if words else type(error).__name__)


class LoggedTraceback(str):
    """A traceback escaped into one line (the string itself), and `error`: the line it ends
    with ("RuntimeError: bot exploded", `loggable_error`), for where the whole is too much."""

    error: str

    def __new__(cls, text: str, error: str) -> LoggedTraceback:
        made = super().__new__(cls, text)
        made.error = error
        return made

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]
        return str(self), self.error  # (a record's arguments may be copied or pickled)


def loggable_traceback(error: BaseException) -> str:
    """The traceback of `error` as Python prints it (causes and exception groups included),
    escaped into one line; a `LoggedTraceback`, which knows its last line too."""
    text = loggable("".join(traceback.format_exception(error)).rstrip("\n"))
    return LoggedTraceback(text, loggable_error(error))


def loggable_failure(error: BaseException) -> str:
    """`loggable_error` for an error GuiAgent raises on purpose, `loggable_traceback` for any
    other (a bug, here or in a plugged-in tool, hook or provider)."""
    if isinstance(error, GuiAgentError):
        return loggable_error(error)
    return loggable_traceback(error)
