"""What the terminal chat reads: lines from a pipe as they come, or, on a terminal, lines a
person edits as in any terminal chat.

On a terminal (standard input and output both, and TERM not `dumb`) the terminal is put in
non-canonical mode without echo for the chat's length, so keys arrive one by one: Left and
Right, Home and End (and Ctrl-A/E/B/F) move in the line, Backspace, Delete, Ctrl-U/K/W
delete, and Up and Down bring back the lines the chat took as messages or commands
(`remember`; answers to approval questions are not kept). Nothing is written to disk: the
chat keeps its history in memory only. Signals stay on (ISIG), so Ctrl-C, Ctrl-Z and
Ctrl-\\ still reach the program as before; Ctrl-C also drops the line being typed, as the
terminal itself does. The keys are decoded on the event loop, where all the chat's output is
written too (`write`), so the line being typed is drawn again below anything written while
it is typed. The terminal's settings are given back by `close`, and again after the program
was stopped (Ctrl-Z) and continued, in case the shell changed them meanwhile.

Keys typed before the chat took the terminal (while the program was starting) were echoed
by the terminal itself, and wait unread: taking the terminal does not drop them. They are
read at once, what the terminal showed of them is erased (`echo_of`), and they are typed
into the line as fresh keys, so they show once, in the line, where they can be edited. The
chat takes the terminal before it writes anything, so the echo is the last thing shown.
A log record written while a line is edited goes through the display too (`write_log`,
`repl_logging`), above the line, which is drawn again below it.

From a pipe, or a terminal that cannot edit, `ChatInput` reads exactly as `LineReader`. A
log record written where the output goes (`2>&1`, or both on a terminal) starts a row of
its own there too: the row of output left open (a reply's `[Executor] ` and what came of
it so far) is ended first and written again after the record, so the reply goes on below.
"""

from __future__ import annotations

import asyncio
import codecs
import errno
import fcntl
import logging
import os
import signal
import struct
import sys
import termios
import threading
from collections.abc import Mapping
from typing import Any, Final, TextIO

from gui_agent.cli import LineReader, ReadEnd, detach_output, printable, write_out
from gui_agent.line_display import LineDisplay
from gui_agent.line_editor import KeyDecoder, LineEditor

logger = logging.getLogger(__name__)

DROPPED: Final = "^C"
"""Shown after a line Ctrl-C dropped, as the terminal's own echo shows it."""
DEFAULT_COLUMNS: Final = 80


def _descriptor(stream: object) -> int | None:
    fileno = getattr(stream, "fileno", None)
    try:
        return int(fileno()) if callable(fileno) else None
    except (AttributeError, ValueError, OSError):  # closed, or not a real file
        return None


def editable_terminal(environ: Mapping[str, str]) -> int | None:
    """The descriptor of the terminal a person types into, when the chat also writes to it
    and it moves its cursor on request (TERM is not `dumb`, as in Emacs' shell buffers)."""
    typed, shown = _descriptor(sys.stdin), _descriptor(sys.stdout)
    if typed is None or shown is None or environ.get("TERM") == "dumb":
        return None
    return typed if os.isatty(typed) and os.isatty(shown) else None


def echo_of(typed: str, modes: int) -> str:
    """What a terminal in its own (canonical) mode showed when `typed` was typed, given its
    local `modes`: nothing without ECHO, control characters as `^X` with ECHOCTL, a line
    break as a new row. (Keys the terminal acted on, such as Backspace, are no longer in
    `typed`, and it took their echo back itself.) NUL is what Ctrl-D leaves: not shown."""
    if not modes & termios.ECHO:
        return ""
    shown: list[str] = []
    for char in typed:
        if char == "\0":
            continue
        control = ord(char) < 0x20 or char == "\x7f"
        if control and char not in "\n\t" and modes & termios.ECHOCTL:
            shown.append("^" + chr(ord(char) ^ 0x40))
        else:
            shown.append(char)
    return "".join(shown)


def _waiting(tty: int) -> bytes:
    """What was typed and is not read yet. The terminal is set for keys one by one already,
    so a read takes what is there, and a line not ended with Enter is there too."""
    waiting = bytearray()
    try:
        count = struct.unpack("i", fcntl.ioctl(tty, termios.FIONREAD, b"\0" * 4))[0]
        while len(waiting) < count:
            chunk = os.read(tty, count - len(waiting))
            if not chunk:
                break
            waiting += chunk
    except OSError as exc:  # hung up: the reading thread finds out too
        logger.debug("cannot read what was typed ahead: %s", exc)
    return bytes(waiting)


def _emit(text: str) -> None:
    """Write `text` as it is (it holds the display's own escape sequences), as `write_out`
    writes: characters the terminal cannot show become `?`, a hung-up terminal takes nothing."""
    encoding = sys.stdout.encoding or "utf-8"
    try:
        sys.stdout.write(text.encode(encoding, errors="replace").decode(encoding))
        sys.stdout.flush()
    except OSError as exc:
        if exc.errno != errno.EIO:
            raise
        detach_output()


def _columns() -> int:
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns or DEFAULT_COLUMNS
    except (AttributeError, ValueError, OSError):
        return DEFAULT_COLUMNS


class ChatInput(LineReader):
    """The chat's input and output: `readline`, plus `write` for everything the chat shows,
    `remember` for what Up brings back, `drop_line` for Ctrl-C, and `close` at the end."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, environ: Mapping[str, str] = os.environ
    ) -> None:
        self._own_settings: list[Any] | None = None  # the terminal's, while it is edited here
        self._edit_settings: list[Any] = []
        self._editor = LineEditor()
        self._keys = KeyDecoder()
        self._display = LineDisplay(_columns)
        self._entered = 0  # lines ended with Enter here, and handed on
        self._taken = 0  # of those, how many `readline` returned
        self._set_aside_at = 0  # how many had been entered at the latest `set_aside`
        self._open_row: list[str] = []  # not edited: the output after the last line break
        self._arrived_keys: list[str] = []  # read, not yet taken by the loop (`_arrived`)
        self._arriving = threading.Lock()
        self._tty = editable_terminal(environ)
        typed_ahead = b""
        if self._tty is not None and self._take_terminal(self._tty):
            typed_ahead = _waiting(self._tty)  # before the reading thread starts: in order
            try:
                loop.add_signal_handler(signal.SIGCONT, self._continued)
            except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
                logger.debug("no SIGCONT handler on this platform")
        super().__init__(loop)  # starts reading: the terminal is already set for editing
        if typed_ahead and self._own_settings is not None:
            text = typed_ahead.decode(self._encoding, errors="replace")
            _emit(self._display.take_back(echo_of(text, self._own_settings[3])))
            self._typed(text)

    @property
    def editing(self) -> bool:
        """Whether keys are edited here (a terminal), rather than lines read as they come."""
        return self._own_settings is not None

    def write(self, text: str) -> None:
        """Show `text` as `write_out` does; a line being typed is drawn again after it."""
        if self.editing:
            _emit(self._display.output(printable(text)))
        else:
            write_out(text)
            self._went_on(text)

    def write_log(self, text: str, stream: TextIO | None = None) -> None:
        """Show `text`, a log record, on rows of its own. While a line is edited: above it,
        and the line is drawn again below it as it was. Else it is written to `stream`
        (standard error by default), which shows where the output does: the output row
        left open is ended first and written again after the record (`_went_on`)."""
        if self.editing:
            _emit(self._display.above(printable(text)))
            return
        row = "".join(self._open_row)
        if row:
            write_out("\n")
        target = stream if stream is not None else sys.stderr
        target.write(text if text.endswith("\n") else text + "\n")
        target.flush()
        if row:
            write_out(row)

    def draws_on(self, stream: object) -> bool:
        """Whether writing to `stream` shows where the chat's output does (the chat's
        standard error, mostly: unless it was sent elsewhere): on the terminal the line is
        edited on, or, when nothing is edited, in the same terminal, pipe or file."""
        written, shown = _descriptor(stream), _descriptor(sys.stdout)
        if written is None or shown is None:
            return False
        try:
            same = os.path.samestat(os.fstat(written), os.fstat(shown))
            return same and (os.isatty(written) or not self.editing)
        except OSError:
            return False

    def _went_on(self, written: str) -> None:
        """Keep the row of output `written` (not edited) leaves open, for `write_log`."""
        _, newline, row = written.rpartition("\n")
        if newline:
            self._open_row = [row] if row else []
        elif written:
            self._open_row.append(written)

    def remember(self, line: str) -> None:
        """Keep `line` for Up: the chat took it as a message or a command."""
        if self.editing:
            self._editor.remember(line)

    def drop_line(self) -> None:
        """Ctrl-C: forget the line being typed and show `^C` after it, as a terminal does."""
        if self.editing:
            self._editor.clear()
            _emit(self._display.finish(DROPPED))

    def set_aside(self) -> str:
        """A question is about to be asked: take the half-typed line out and return it (to
        `put_back` once the question is answered), so the answer starts empty and nothing
        typed before the question can answer it (`entered_after_set_aside`)."""
        if not self.editing:
            return ""
        self._set_aside_at = self._entered
        text = self._editor.take()
        if text:
            _emit(self._display.edit("", 0))
        return text

    def put_back(self, text: str) -> None:
        """Give back, at the start of the line, what `set_aside` took out."""
        if self.editing and text:
            self._editor.put_back(text)
            _emit(self._display.edit(self._editor.text, self._editor.cursor))

    @property
    def entered_after_set_aside(self) -> bool:
        """Whether the line `readline` returned last was entered after the latest
        `set_aside`, so it can be the answer to the question asked then. A line entered
        before may reach the chat only after the question was shown (it was on its way):
        it is not an answer. From a pipe, lines are answers in order: always True."""
        return not self.editing or self._taken > self._set_aside_at

    async def readline(self, prompt: str) -> str | ReadEnd:
        if not self.editing:
            self._went_on(prompt)  # (`LineReader` writes it)
            line = await super().readline(prompt)
            if isinstance(line, str) and self.terminal:
                self._open_row = []  # the terminal's echo of the line ended the row
            return line
        _emit(self._display.ask(printable(prompt)))
        try:
            line = await super().readline("")
        finally:
            self._display.settle()  # answered or given up: the prompt stays as it is shown
        if isinstance(line, str):
            self._taken += 1
        return line

    def close(self) -> None:
        """Give the terminal its own settings back (the chat is over); a line left half
        typed stays shown, and what is written next starts below it."""
        if self.editing and self._display.text:
            _emit(self._display.finish("\n"))
        if self.editing:
            self._went_on(self._display.lead)  # written as it comes from now on
        settings, self._own_settings = self._own_settings, None
        if settings is not None and self._tty is not None:
            self._loop.remove_signal_handler(signal.SIGCONT)
            _set_terminal(self._tty, settings)

    # -- the terminal ----------------------------------------------------------------------

    def _take_terminal(self, tty: int) -> bool:
        """Keys one by one, not echoed, signals on; False when the terminal refuses (then
        lines are read as they come)."""
        try:
            own = termios.tcgetattr(tty)
        except (termios.error, OSError) as exc:
            logger.debug("the terminal cannot edit lines: %s", exc)
            return False
        edit = list(own)
        edit[3] = own[3] & ~(termios.ICANON | termios.ECHO | termios.IEXTEN)
        edit[6] = list(own[6])
        edit[6][termios.VMIN], edit[6][termios.VTIME] = 1, 0
        if not _set_terminal(tty, edit):
            return False
        self._own_settings, self._edit_settings = own, edit
        return True

    def _continued(self) -> None:
        """After Ctrl-Z and `fg`: the shell may have set the terminal for itself."""
        if self.editing and self._tty is not None and _set_terminal(self._tty, self._edit_settings):
            _emit(self._display.redraw(self._editor.text, self._editor.cursor))

    # -- reading ---------------------------------------------------------------------------

    def _pump(self) -> None:
        if not self.editing:
            super()._pump()
            return
        decoder = codecs.getincrementaldecoder(self._encoding)(errors="replace")
        while True:
            chunk = self._read_chunk(4096)
            try:
                if not chunk:
                    self._loop.call_soon_threadsafe(self._hung_up)
                    return
                self._arrived(decoder.decode(chunk))
            except RuntimeError:  # the loop is closed: the chat is over
                return

    def _arrived(self, text: str) -> None:
        """On the reading thread: keys read, for the loop to take (`_take_arrived`). Pieces
        that come while the loop is busy (a paste comes in pieces of a few kB) wait and are
        taken together, so a paste is edited and drawn a few times, not once a piece, and a
        Ctrl-C waits for no more than the keys the loop is on."""
        with self._arriving:
            self._arrived_keys.append(text)
            if len(self._arrived_keys) > 1:
                return  # the loop is called for them already
        self._loop.call_soon_threadsafe(self._take_arrived)

    def _take_arrived(self) -> None:
        """On the loop: the keys read since it was last called, in order."""
        with self._arriving:
            text = "".join(self._arrived_keys)
            self._arrived_keys.clear()
        self._typed(text)

    def _hung_up(self) -> None:
        """The terminal is gone: the end of input, for good (as from a pipe)."""
        self._terminal = False
        self._put(ReadEnd.EOF)

    def _typed(self, text: str) -> None:
        """Keys the person pressed, on the loop: edit the line, hand on each finished one."""
        if not self.editing:
            return  # the chat is over
        changed = False
        for key in self._keys.feed(text):
            done = self._editor.press(key)
            if isinstance(done, str):
                self._display.text = done
                _emit(self._display.finish("\n"))
                self._entered += 1
                self._put(done)
                changed = False
            elif done is ReadEnd.EOF:
                self._put(done)
            else:
                changed = True
        if changed:
            _emit(self._display.edit(self._editor.text, self._editor.cursor))


def _set_terminal(tty: int, settings: list[Any]) -> bool:
    try:
        termios.tcsetattr(tty, termios.TCSANOW, settings)
    except (termios.error, OSError) as exc:  # hung up
        logger.debug("cannot set the terminal: %s", exc)
        return False
    return True
