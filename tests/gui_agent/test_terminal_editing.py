"""`gui-agent chat` in a real pseudo-terminal: the line is edited as in any terminal chat.

The keys are typed as a terminal sends them (Left is ESC [ D), and what the model receives
is checked: the edited text, the message Up brought back. Answers to approval questions are
not brought back, Ctrl-C drops a half-typed line, and the terminal's own settings come back
when the chat ends, or after the shell took the terminal while the chat was stopped.
"""

from __future__ import annotations

import os
import signal
import sys
import termios
from pathlib import Path

import pytest

from tests.gui_agent.screen import Screen
from tests.gui_agent.test_repl_errors import workspace
from tests.gui_agent.test_terminal_keys import CTRL_C, LEAVE_HINT, Terminal
from tests.gui_agent.test_terminal_live import live_chat

LEFT, RIGHT, UP, DOWN = b"\x1b[D", b"\x1b[C", b"\x1b[A", b"\x1b[B"
HOME, END = b"\x1b[H", b"\x1b[F"
reads_proc = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def line_settings(pid: int) -> int:
    """The local modes (ICANON, ECHO, ...) of the terminal the program `pid` reads."""
    fd = os.open(os.readlink(f"/proc/{pid}/fd/0"), os.O_RDWR | os.O_NOCTTY)
    try:
        return int(termios.tcgetattr(fd)[3])
    finally:
        os.close(fd)


def test_arrows_home_and_end_edit_the_line_the_model_receives(tmp_path: Path) -> None:
    terminal = live_chat(tmp_path, [{}])
    terminal.read_until(b"you> ")
    terminal.type(b"helo")
    terminal.type(LEFT + b"l")  # helo -> hello
    terminal.type(END + b" wrld" + LEFT * 3 + b"o")  # -> hello world
    terminal.type(HOME + b"say: " + RIGHT * 5 + b"\n")
    terminal.read_until(b"you said: say: hello world ")
    screen = Screen(80)  # the pseudo-terminal has no size set: the chat counts 80 columns
    screen.feed(terminal.seen.decode())
    assert "you> say: hello world" in screen.rows  # the line as edited stays on the screen
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0


def test_up_brings_back_what_was_sent_and_enter_sends_it_again(tmp_path: Path) -> None:
    terminal = live_chat(tmp_path, [{}])
    terminal.read_until(b"you> ")
    terminal.type(b"first message\n")
    terminal.read_until(b"you said: first message")
    terminal.read_until(b"you> ")
    terminal.type(b"second\n")
    terminal.read_until(b"you said: second")
    terminal.read_until(b"you> ")
    terminal.type(UP + b"\n")  # the last one
    terminal.read_until(b"you said: second")
    terminal.read_until(b"you> ")
    terminal.type(b"draft" + UP + UP + UP + DOWN + b" again\n")  # second, first, (oldest), second
    terminal.read_until(b"you said: second again")
    terminal.read_until(b"you> ")
    terminal.type(b"kept" + UP + DOWN + b"\n")  # Down past the newest: the line being typed
    terminal.read_until(b"you said: kept")
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0


def test_an_answer_to_an_approval_question_is_not_brought_back_by_up(tmp_path: Path) -> None:
    steps: list[dict[str, object]] = [
        {"say": "asking", "tool": {"path": "a.txt", "content": "hi"}},
        {"say": "done"},
        {},
    ]
    terminal = live_chat(tmp_path, steps)
    terminal.read_until(b"you> ")
    terminal.type(b"write a file\n")
    terminal.read_until(b"allow? [y]es once / [s] for this chat / [N]o: ")
    terminal.type(b"n\n")
    assert b"approval: deny (user)" in terminal.read_until(b"done")
    terminal.read_until(b"you> ")
    terminal.type(UP + b"\n")  # the message before the answer
    terminal.read_until(b"you said: write a file")
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0
    assert not (tmp_path / "work" / "a.txt").exists()


def test_a_line_edited_while_a_reply_streams_is_acted_on_as_edited(tmp_path: Path) -> None:
    terminal = live_chat(tmp_path, [{"endless": True}, {}])
    terminal.read_until(b"you> ")
    terminal.type(b"talk until I say stop\n")
    terminal.read_until(b"w20 ")
    terminal.type(b"/sop" + LEFT + LEFT + b"t\n")  # /sop -> /stop
    stopped = terminal.read_until(b"you> ")
    assert b"(interrupted: stopped by the user)" in stopped
    assert b"unknown command" not in stopped
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0


def test_ctrl_c_drops_the_half_typed_line(tmp_path: Path) -> None:
    terminal = live_chat(tmp_path, [{}])
    terminal.read_until(b"you> ")
    terminal.type(b"half typed")
    terminal.read_until(b"half typed")  # shown: it is in the line, not only sent
    terminal.type(CTRL_C)
    terminal.read_until(LEAVE_HINT)
    terminal.read_until(b"you> ")
    terminal.type(b"hello\n")
    said = terminal.read_until(b"you said: ")
    assert said.endswith(b"you said: ")
    assert terminal.read_until(b"you> ").startswith(b"hello ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0


def test_a_block_typed_in_a_terminal_is_one_message(tmp_path: Path) -> None:
    terminal = live_chat(tmp_path, [{}])
    terminal.read_until(b"you> ")
    terminal.type(b'"""\nline one\n')
    terminal.type(b"line tow" + LEFT + LEFT + b"w" + RIGHT + RIGHT + b"\b\n")  # line two
    terminal.type(b'"""\n')
    terminal.read_until(b"you said: line one\r\nline two ")
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0


# The chat, then the terminal's line modes once it has ended (argv[1]: the working folder)
SETTINGS_DRIVER = """
import sys, termios
from gui_agent.cli import main
code = main(["chat", "--model", "scripted:echo", "--no-probe", "--workdir", sys.argv[1]])
modes = termios.tcgetattr(0)[3]
print(f"after: canonical={bool(modes & termios.ICANON)} echo={bool(modes & termios.ECHO)}")
sys.exit(code)
"""


@reads_proc
def test_the_terminal_gets_its_settings_back_when_the_chat_ends(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", SETTINGS_DRIVER, str(workspace(tmp_path))]
    for ending, code in ((b"/quit\n", 0), (None, 128 + signal.SIGTERM)):
        terminal = Terminal(argv, tmp_path)
        terminal.read_until(b"you> ")
        assert not line_settings(terminal.pid) & (termios.ICANON | termios.ECHO)  # keys, unechoed
        if ending is None:
            os.kill(terminal.pid, signal.SIGTERM)
        else:
            terminal.type(ending)
        terminal.read_until(b"after: canonical=True echo=True")
        assert terminal.exit_code() == code


@reads_proc
def test_after_the_chat_was_stopped_and_continued_the_line_is_edited_again(
    tmp_path: Path,
) -> None:
    terminal = live_chat(tmp_path, [{}])
    terminal.read_until(b"you> ")
    os.kill(terminal.pid, signal.SIGSTOP)  # Ctrl-Z in a shell
    os.waitpid(terminal.pid, os.WUNTRACED)
    slave = os.open(os.readlink(f"/proc/{terminal.pid}/fd/0"), os.O_RDWR | os.O_NOCTTY)
    try:  # the shell sets the terminal for itself meanwhile
        modes = termios.tcgetattr(slave)
        modes[3] |= termios.ICANON | termios.ECHO
        termios.tcsetattr(slave, termios.TCSANOW, modes)
    finally:
        os.close(slave)
    os.kill(terminal.pid, signal.SIGCONT)  # `fg`
    terminal.type(b"helo" + LEFT + b"l\n")
    terminal.read_until(b"you said: hello ")
    terminal.read_until(b"you> ")
    assert not line_settings(terminal.pid) & (termios.ICANON | termios.ECHO)  # keys again
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0
