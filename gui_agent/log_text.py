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

Where the traceback is what one reads the log for, it is written whole, on its own lines
(`LoggedTraceback.whole`): at DEBUG, and in a log that is not a terminal (a file, a pipe),
as `shows_tracebacks_whole` decides and `TracebackFormatter` writes. Each of its lines is
escaped as above, and every one after the first starts with two spaces (but an empty one,
between a cause and what it caused): no line a message put in it can start at the left
edge, where each record of the log starts, so none can pass for a record of its own.

Here rather than in `connectors/` because the core logs such text too, and the core imports
only `schema`, never the connectors; `connectors.log_text.loggable` is this same function.
"""

from __future__ import annotations

import logging
import traceback
from typing import Final

from gui_agent.exceptions import GuiAgentError

__all__ = [
    "WHOLE_TRACEBACK_INDENT",
    "LoggedTraceback",
    "TracebackFormatter",
    "loggable",
    "loggable_error",
    "loggable_failure",
    "loggable_traceback",
    "shows_tracebacks_whole",
    "with_whole_tracebacks",
]

WHOLE_TRACEBACK_INDENT: Final = "  "
"""What starts each line of a traceback written whole after its first (`LoggedTraceback`)."""


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
    """A traceback escaped into one line (the string itself); `error`, the line it ends
    with ("RuntimeError: bot exploded", `loggable_error`), for where the whole is too much;
    and `whole`, the traceback on its lines, for a log read for it (`TracebackFormatter`):
    each line escaped, each after the first indented by `WHOLE_TRACEBACK_INDENT` (an empty
    one left empty)."""

    error: str
    whole: str

    def __new__(cls, text: str, error: str, whole: str | None = None) -> LoggedTraceback:
        made = super().__new__(cls, text)
        made.error = error
        made.whole = text if whole is None else whole
        return made

    def __getnewargs__(self) -> tuple[str, str, str]:  # type: ignore[override]
        return str(self), self.error, self.whole  # (a record's arguments may be copied)


def loggable_traceback(error: BaseException) -> LoggedTraceback:
    """The traceback of `error` as Python prints it (causes and exception groups included),
    escaped into one line; a `LoggedTraceback`, which knows its last line and its whole
    form too."""
    text = "".join(traceback.format_exception(error)).rstrip("\n")
    first, *rest = [loggable(line) for line in text.split("\n")]
    whole = first + "".join(f"\n{WHOLE_TRACEBACK_INDENT}{line}" if line else "\n" for line in rest)
    return LoggedTraceback(loggable(text), loggable_error(error), whole)


def shows_tracebacks_whole(stream: object, *, debug: bool) -> bool:
    """Whether a log written to `stream` shows tracebacks whole, on their lines: at DEBUG
    (`debug`: DEBUG records are written), or when `stream` is no terminal (a file, a pipe:
    a log kept to be read later, for what went wrong). On a terminal at another level a
    traceback stays on its record's line, among what else the terminal shows."""
    if debug:
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return not (callable(isatty) and isatty())
    except (ValueError, OSError):  # closed
        return True


class TracebackFormatter(logging.Formatter):
    """A formatter that writes each traceback a record carries (`LoggedTraceback`) whole,
    on its lines, when told to (`whole`; `shows_tracebacks_whole` says when), else on the
    record's one line, as `logging.Formatter` does."""

    def __init__(self, fmt: str | None = None, *, whole: bool) -> None:
        super().__init__(fmt)
        self.whole = whole

    def format(self, record: logging.LogRecord) -> str:
        return super().format(with_whole_tracebacks(record) if self.whole else record)


def with_whole_tracebacks(record: logging.LogRecord) -> logging.LogRecord:
    """`record`, or, when it carries tracebacks (`LoggedTraceback` arguments), a copy with
    each written whole (the record itself is left as it is, for the other handlers)."""
    args = record.args
    if not isinstance(args, tuple) or not any(isinstance(a, LoggedTraceback) for a in args):
        return record
    copy = logging.makeLogRecord(record.__dict__)
    copy.args = tuple(a.whole if isinstance(a, LoggedTraceback) else a for a in args)
    return copy


def loggable_failure(error: BaseException) -> str:
    """`loggable_error` for an error GuiAgent raises on purpose, `loggable_traceback` for any
    other (a bug, here or in a plugged-in tool, hook or provider)."""
    if isinstance(error, GuiAgentError):
        return loggable_error(error)
    return loggable_traceback(error)
