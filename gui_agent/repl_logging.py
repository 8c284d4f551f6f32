"""The chat's log records on the terminal where a line is being edited.

The CLI logs to standard error, which on a terminal is where the chat draws the line being
typed: a record written there as it comes lands in the middle of that line, and the line is
not drawn again. So while the chat edits lines, each handler on the root logger that writes
to that terminal (the one `logging.basicConfig` put there) is swapped, in its place, for one
that writes through the line's display (`ChatInput.write_log`): the line is taken away, the
record is written on rows of its own, and the line is drawn again below it, the cursor where
it was. The swapped handler keeps the level, filters and format of the one it stands for.

When nothing is edited (the lines come from a pipe) but the records show where the output
does (`2>&1`, or both on one terminal), a handler writing there is swapped too: a record
then starts a row of its own, though the output left its row open (`[Executor] `, before
the reply: a retry's warning came there), and that row is written again below it, so the
reply goes on readably (`ChatInput.write_log`). Once the chat closed its input, records are
written that way too. Records that go elsewhere (standard error sent to a file of its own)
are left to their handler: nothing is swapped.

A record that carries a traceback (`log_text.loggable_traceback`: a failing `--agent`, a
hook's bug) is said in one readable line where the chat shows on a terminal: the error its
traceback ends with, and how to see the traceback (`--log-level DEBUG`, or a log sent
elsewhere: `2>file`). A record of a thousand characters of escaped frames, written among
the replies, buried the chat's own `! agent_failed: ...` line that says the same. At DEBUG,
and where the chat's output is no terminal (`2>&1 > transcript`: read later, to find out
what went wrong), the traceback is written whole, on its lines
(`log_text.shows_tracebacks_whole`).

A model call asked again is said by the chat's own notice of it (the `model_retrying`
event, `repl_display`): the record logged of that retry (marked `SAID_BY_NOTICE`) is left
out where the chat shows, so the person reads it once. A log written elsewhere keeps it.

The output is only written on the event loop (where the keys are edited and the chat writes
too), so a record logged by another thread is handed to the loop. When the chat ends, the
handlers are put back in their places, exactly as they were.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

from gui_agent.log_text import LoggedTraceback, shows_tracebacks_whole, with_whole_tracebacks
from gui_agent.repl_input import ChatInput
from gui_agent.retry_words import SAID_BY_NOTICE

TRACEBACK_HINT = " (--log-level DEBUG shows the traceback)"
"""Said after the error a record's traceback ends with, where the chat shows it."""


class _AboveTheLine(logging.Handler):
    """Writes what `shown` would write, on rows of its own (`ChatInput.write_log`)."""

    def __init__(
        self,
        shown: logging.StreamHandler[Any],
        reader: ChatInput,
        loop: asyncio.AbstractEventLoop,
        logger: logging.Logger,
    ) -> None:
        super().__init__(shown.level)
        self.filters = shown.filters  # the same list: a filter added to it later counts too
        self._shown = shown
        self._logger = logger
        self._reader = reader
        self._loop = loop
        self._loop_thread = threading.get_ident()  # made on the loop, for its chat

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, SAID_BY_NOTICE, False):
            return False  # the chat shows the retry's notice: the record would say it twice
        return super().filter(record)

    def format(self, record: logging.LogRecord) -> str:
        return self._shown.format(self._briefly(record))

    def _briefly(self, record: logging.LogRecord) -> logging.LogRecord:
        """`record`; when it carries a traceback, a copy with it written whole where
        tracebacks are shown whole (at DEBUG, or not on a terminal), else saying only the
        error the traceback ends with, and how to see the rest."""
        args = record.args
        if not isinstance(args, tuple) or not any(isinstance(a, LoggedTraceback) for a in args):
            return record
        debug = self.level <= logging.DEBUG and self._logger.isEnabledFor(logging.DEBUG)
        if shows_tracebacks_whole(self._shown.stream, debug=debug):
            return with_whole_tracebacks(record)
        brief = logging.makeLogRecord(record.__dict__)
        brief.args = tuple(
            a.error + TRACEBACK_HINT if isinstance(a, LoggedTraceback) else a for a in args
        )
        return brief

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)  # now: the record's arguments may change later
        except Exception:
            self.handleError(record)
            return
        if threading.get_ident() == self._loop_thread:
            self._show(text, record)
            return
        try:
            self._loop.call_soon_threadsafe(self._show, text, record)
        except RuntimeError:  # the loop is closed: the chat is over
            self._shown.handle(record)

    def _show(self, text: str, record: logging.LogRecord) -> None:
        """On the loop: on rows of its own, above the line being edited or the output."""
        try:
            self._reader.write_log(text + self._shown.terminator, self._shown.stream)
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def logs_above_the_line(reader: ChatInput, logger: logging.Logger | None = None) -> Iterator[None]:
    """For the block's length, records `logger` (the root logger by default) writes where
    `reader`'s output shows are written on rows of their own: above the line being typed,
    or below the row of output they came in. Call it on the event loop `reader` reads on."""
    target = logger if logger is not None else logging.getLogger()
    loop = asyncio.get_running_loop()
    swapped: list[tuple[logging.Handler, logging.Handler]] = []
    for index, handler in enumerate(list(target.handlers)):
        if isinstance(handler, logging.StreamHandler) and reader.draws_on(handler.stream):
            ours = _AboveTheLine(handler, reader, loop, target)
            target.handlers[index] = ours  # in its place: the order of handlers is kept
            swapped.append((ours, handler))
    try:
        yield
    finally:
        for stand_in, handler in swapped:
            if stand_in in target.handlers:
                target.handlers[target.handlers.index(stand_in)] = handler
