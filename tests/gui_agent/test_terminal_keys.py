"""`gui-agent chat` and `users add` in a real pseudo-terminal: Ctrl-C and Ctrl-D as keys.

The keys are typed into the terminal (`\\x03`, `\\x04`), so the terminal driver itself sends
SIGINT to the program or ends its read, exactly as for a person at a keyboard.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

from tests.gui_agent.test_repl_errors import DRIVER, WRITE_A_FILE, env

CLI = str(Path(sys.executable).parent / "gui-agent")
CTRL_C = b"\x03"
CTRL_D = b"\x04"
LEAVE_HINT = b"(Ctrl-C again, Ctrl-D or /quit leaves the chat)"
ENDS_WITHIN_S = 60
RESTORED_SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGPIPE, signal.SIGXFSZ)


class Terminal:
    """A program running in a new pseudo-terminal, as its controlling terminal."""

    def __init__(self, argv: list[str], tmp_path: Path) -> None:
        environment = env(tmp_path)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become the program (nothing else runs here)
            try:
                # As a person's shell starts it: no signal ignored. (A suite started in the
                # background of a script has SIGINT and SIGQUIT ignored, and an ignored
                # signal stays ignored across exec.)
                for number in RESTORED_SIGNALS:
                    signal.signal(number, signal.SIG_DFL)
                os.chdir(tmp_path)
                os.execve(argv[0], argv, environment)
            finally:
                os._exit(127)
        self.seen = b""
        self._read_to = 0

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def read_until(self, marker: bytes) -> bytes:
        """Output from the last marker found up to this one (fails after 30 s or at the end)."""
        while marker not in self.seen[self._read_to :]:
            ready, _, _ = select.select([self.fd], [], [], 30)
            assert ready, f"no {marker!r} in:\n{self.seen.decode(errors='replace')[-3000:]}"
            chunk = self._read()
            assert chunk, f"ended before {marker!r}:\n{self.seen.decode(errors='replace')}"
        start = self._read_to
        self._read_to = self.seen.index(marker, start) + len(marker)
        return self.seen[start : self._read_to]

    def exit_code(self) -> int:
        """Wait for the program to end (reading what it still prints) and return its code;
        after 60 s it is killed and the test fails, showing what it printed."""
        deadline = time.monotonic() + ENDS_WITHIN_S
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.fd], [], [], max(0.0, left))
            if not ready:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                os.close(self.fd)
                tail = self.seen.decode(errors="replace")[-3000:]
                raise AssertionError(f"still running after {ENDS_WITHIN_S} s:\n{tail}")
            if not self._read():
                break
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)

    def _read(self) -> bytes:
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # EIO: the program closed the terminal
            chunk = b""
        self.seen += chunk
        return chunk


def chat(tmp_path: Path, replies: list[object]) -> tuple[Terminal, Path]:
    folder = tmp_path / "work"
    folder.mkdir()
    argv = [sys.executable, "-c", DRIVER, json.dumps(replies), "--workdir", str(folder)]
    return Terminal(argv, tmp_path), folder


def test_ctrl_c_at_the_prompt_says_how_to_leave_and_only_a_second_one_in_a_row_leaves(
    tmp_path: Path,
) -> None:
    terminal, _ = chat(tmp_path, ["still here"])
    terminal.read_until(b"you> ")
    terminal.type(CTRL_C)
    terminal.read_until(LEAVE_HINT)
    terminal.read_until(b"you> ")
    terminal.type(b"hello\n")  # a Ctrl-C, then a message: the next Ctrl-C only warns again
    terminal.read_until(b"still here")
    terminal.read_until(b"you> ")
    terminal.type(CTRL_C)
    terminal.read_until(LEAVE_HINT)
    terminal.read_until(b"you> ")
    terminal.type(CTRL_C)
    assert terminal.exit_code() == 0
    assert b"Traceback" not in terminal.seen


def test_ctrl_c_twice_while_a_question_is_asked_stops_the_turn_and_keeps_the_chat(
    tmp_path: Path,
) -> None:
    terminal, folder = chat(tmp_path, [WRITE_A_FILE, "answer to the next message"])
    terminal.read_until(b"you> ")
    terminal.type(b"write a file\n")
    terminal.read_until(b"allow?")
    terminal.type(CTRL_C)
    terminal.read_until(b"(interrupted")
    terminal.read_until(b"you> ")
    terminal.type(CTRL_C)  # the second press of a double Ctrl-C lands at the prompt
    terminal.read_until(LEAVE_HINT)
    terminal.type(b"hello again\n")
    terminal.read_until(b"answer to the next message")
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0
    assert not (folder / "a.txt").exists()


def test_ctrl_d_at_the_approval_prompt_denies_and_the_chat_goes_on(tmp_path: Path) -> None:
    terminal, folder = chat(tmp_path, [WRITE_A_FILE, "carried on without it", "second answer"])
    terminal.read_until(b"you> ")
    terminal.type(b"write a file\n")
    terminal.read_until(b"allow?")
    terminal.type(CTRL_D)
    assert b"approval: deny (user)" in terminal.read_until(b"carried on without it")
    terminal.read_until(b"you> ")
    terminal.type(b"and now?\n")  # the terminal is still there: this is read, not dropped
    terminal.read_until(b"second answer")
    terminal.read_until(b"you> ")
    terminal.type(CTRL_D)  # at the prompt, Ctrl-D leaves
    assert terminal.exit_code() == 0
    assert not (folder / "a.txt").exists()


def test_a_message_typed_during_a_turn_that_is_then_stopped_is_said_to_be_unanswered(
    tmp_path: Path,
) -> None:
    """It was confirmed as sent ("the agent reads it next"): when the Stop leaves it
    unanswered, the chat says so, naming it, rather than dropping it without a word."""
    argv = [CLI, "chat", "--model", "scripted:echo", "--no-probe", "--workdir", str(tmp_path)]
    terminal = Terminal(argv, tmp_path)
    terminal.read_until(b"you> ")
    terminal.type(" ".join(f"w{i}" for i in range(3000)).encode() + b"\n")
    terminal.read_until(b"[Executor] ")
    terminal.read_until(b"w20 ")  # the reply streams (~100 words/s): the next line waits
    terminal.type(b"and then this, please\n")
    terminal.read_until(b"(sent: the agent reads it next)")
    terminal.type(CTRL_C)
    said = terminal.read_until(b"you> ")
    assert b"(interrupted" in said
    assert (
        b"(not answered: 'and then this, please': the turn it waited for was stopped "
        b"before the agent read it; send it again)"
    ) in said
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0


def test_ctrl_c_or_ctrl_d_at_the_password_question_ends_quietly_and_saves_nothing(
    tmp_path: Path,
) -> None:
    users = tmp_path / "users.json"
    codes = []
    for key in (CTRL_C, CTRL_D):
        terminal = Terminal([CLI, "users", "add", "bob", "--auth-file", str(users)], tmp_path)
        terminal.read_until(b"password for bob: ")
        terminal.type(key)
        codes.append(terminal.exit_code())
        assert b"Traceback" not in terminal.seen, terminal.seen.decode()
        if key == CTRL_D:
            assert b"gui-agent: no password given; nothing was saved" in terminal.seen
    assert codes == [130, 2]
    assert not users.exists()
