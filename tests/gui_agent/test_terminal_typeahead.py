"""`gui-agent chat` in a real pseudo-terminal: keys typed while the program starts.

They are typed before the program has even set the terminal for editing, so the terminal
echoes them itself; the chat takes that echo back and puts the keys in the line, where
they show once and can be edited, and Enter sends them once.
"""

from __future__ import annotations

import termios
from pathlib import Path

from gui_agent.repl_input import echo_of
from tests.gui_agent.screen import Screen
from tests.gui_agent.test_terminal_live import live_chat

HOME = b"\x1b[H"


def test_keys_typed_while_the_chat_starts_show_once_in_the_line_and_are_sent_once(
    tmp_path: Path,
) -> None:
    terminal = live_chat(tmp_path, [{}])
    terminal.type(b"hello")  # the program is only starting: the terminal echoes this
    terminal.read_until(b"hello")
    terminal.read_until(b"you> hello")
    screen = Screen(80)  # the pseudo-terminal has no size set: the chat counts 80 columns
    screen.feed(terminal.seen.decode())
    assert [row for row in screen.rows if "hello" in row] == ["you> hello"]
    assert screen.rows[0].startswith("model: ")  # not after an echoed "hello"
    assert screen.cursor == (len(screen.rows) - 1, 10)
    terminal.type(HOME + b"say \n")  # they are in the line: editable
    said = terminal.read_until(b"you said: ")
    assert b"you> say hello\r\n" in said
    assert terminal.read_until(b"you> ").startswith(b"say hello \r\n")  # once
    assert terminal.seen.count(b"you said:") == 1
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0


def test_what_a_terminal_echoes_of_keys_typed_in_its_own_mode() -> None:
    modes = termios.ECHO | termios.ECHOCTL | termios.ICANON
    assert echo_of("héllo\tthere\nnext", modes) == "héllo\tthere\nnext"
    assert echo_of("a\x1b[Db", modes) == "a^[[Db"  # Left, typed before the chat took the keys
    assert echo_of("a\x1b[Db", termios.ECHO) == "a\x1b[Db"
    assert echo_of("done\0", modes) == "done"  # Ctrl-D's end of input is not shown
    assert echo_of("hidden", termios.ICANON) == ""  # no echo (a password prompt's mode)
