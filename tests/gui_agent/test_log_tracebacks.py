"""A traceback written whole, for a log read to find out what went wrong.

The core logs a traceback as a `LoggedTraceback`: escaped onto its record's one line, as
every line the core logs is. Where the log is read for it (at DEBUG, or a log that is no
terminal: a file, a pipe), the CLI's formatter writes it whole, on its lines. A message in
it (a model's or a tool's words) still cannot forge a record: each of its lines is escaped,
and each after the first is indented, so none starts at the left edge, where records do.
"""

from __future__ import annotations

import copy
import io
import logging
import pickle

from gui_agent.log_text import (
    LoggedTraceback,
    TracebackFormatter,
    loggable_traceback,
    shows_tracebacks_whole,
)

FOREIGN = "said:\n2030-01-01 CRITICAL root: all is well \x1b[2J"
"""A forged record on a line of its own, and a terminal escape that clears the screen."""


def _raise_chained() -> None:
    try:
        raise ValueError(FOREIGN)
    except ValueError as cause:
        raise RuntimeError("while reading\nthe reply") from cause


def a_traceback() -> LoggedTraceback:
    try:
        _raise_chained()
    except RuntimeError as error:
        return loggable_traceback(error)
    raise AssertionError("it raised")


def test_a_traceback_written_whole_is_on_its_lines_and_forges_no_record() -> None:
    shown = a_traceback()
    assert shown.isprintable() and "\\n" in shown  # its one-line form, as before
    lines = shown.whole.split("\n")
    assert lines[0] == "Traceback (most recent call last):"
    assert all(line.startswith("  ") or not line for line in lines[1:]), lines
    assert all(line.isprintable() for line in lines)
    assert '  File "' in shown.whole and "in _raise_chained" in shown.whole
    assert "  2030-01-01 CRITICAL root: all is well \\x1b[2J" in lines  # indented, escaped
    assert lines[-2:] == ["  RuntimeError: while reading", "  the reply"]
    kept = pickle.loads(pickle.dumps(shown))  # (a record's arguments may be copied)
    assert (kept.whole, kept.error, copy.copy(shown).whole) == (
        shown.whole,
        shown.error,
        shown.whole,
    )


def test_the_formatter_writes_a_traceback_whole_only_when_told_and_leaves_the_record() -> None:
    shown = a_traceback()
    record = logging.LogRecord("gui_agent.turn", logging.ERROR, "", 0, "failed: %s", (shown,), None)
    whole = TracebackFormatter("%(levelname)s %(message)s", whole=True).format(record)
    assert whole == f"ERROR failed: {shown.whole}"
    assert record.args == (shown,)  # other handlers format it as they do
    one_line = TracebackFormatter("%(levelname)s %(message)s", whole=False).format(record)
    assert one_line == f"ERROR failed: {shown}" and one_line.isprintable()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_tracebacks_are_whole_at_debug_or_off_a_terminal() -> None:
    assert not shows_tracebacks_whole(_Terminal(), debug=False)
    assert shows_tracebacks_whole(_Terminal(), debug=True)
    assert shows_tracebacks_whole(io.StringIO(), debug=False)  # a file, a pipe
