"""`gui-agent chat` in a real pseudo-terminal: a log record written while a line is typed.

The record goes on rows of its own, above the line, and the line is drawn again below it
with the cursor where it was, so what was typed is neither cut in two nor lost; Enter then
sends exactly the typed text. Records logged by another thread are shown the same way.
When the chat ends the logging handlers are the ones the CLI installed, in their places.
From a pipe, a record that shows where the output does (`2>&1`) starts a line of its own,
and the reply it came in goes on below it; a handler writing elsewhere is left as it is.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pty
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gui_agent.repl_input import ChatInput
from gui_agent.repl_logging import logs_above_the_line
from tests.connectors.peers import Reply, ScriptedPeer, openai_error, openai_text_stream
from tests.gui_agent.screen import Screen
from tests.gui_agent.test_repl_errors import env, workspace
from tests.gui_agent.test_terminal_keys import CLI, Terminal
from tests.gui_agent.test_terminal_live import LIVE_DRIVER

LEFT = b"\x1b[D"

# Before the live chat's driver: SIGUSR1 logs a warning on the event loop, SIGUSR2 from
# another thread; after the chat, whether the root logger's handlers are those it had.
LOGGING_DRIVER = (
    """
import logging, signal, threading
import gui_agent.repl, gui_agent.repl_input

log = logging.getLogger("gui_agent.test")

class Signalled(gui_agent.repl_input.ChatInput):
    def __init__(self, loop, *args, **kwargs):
        super().__init__(loop, *args, **kwargs)
        loop.add_signal_handler(signal.SIGUSR1, log.warning, "disk almost full")
        def from_a_thread():
            threading.Thread(target=log.warning, args=("from a thread",)).start()
        loop.add_signal_handler(signal.SIGUSR2, from_a_thread)

gui_agent.repl_input.ChatInput = Signalled
chat = gui_agent.repl.run_repl

async def run_repl(*args, **kwargs):
    before = list(logging.getLogger().handlers)
    try:
        return await chat(*args, **kwargs)
    finally:
        after = logging.getLogger().handlers
        same = len(after) == len(before) and all(a is b for a, b in zip(after, before))
        print(f"handlers restored: {same}", flush=True)

gui_agent.repl.run_repl = run_repl
"""
    + LIVE_DRIVER
)


def screen_of(terminal: Terminal) -> Screen:
    screen = Screen(80)  # the pseudo-terminal has no size set: the chat counts 80 columns
    screen.feed(terminal.seen.decode())
    return screen


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="needs SIGUSR1")
def test_a_log_record_while_a_line_is_typed_goes_above_it_and_the_line_stays_whole(
    tmp_path: Path,
) -> None:
    argv = [sys.executable, "-c", LOGGING_DRIVER, "[{}]", "--workdir", str(workspace(tmp_path))]
    terminal = Terminal(argv, tmp_path)
    terminal.read_until(b"you> ")
    terminal.type(b"hello world")
    terminal.read_until(b"hello world")
    terminal.type(LEFT * 6)
    terminal.read_until(b"\r\x1b[10C")  # the cursor after "hello": the keys were taken
    os.kill(terminal.pid, signal.SIGUSR1)
    terminal.read_until(b"WARNING gui_agent.test: disk almost full")
    terminal.read_until(b"you> hello world")  # drawn again below it
    screen = screen_of(terminal)
    assert screen.rows[-1] == "you> hello world"
    assert screen.rows[-2].endswith(" WARNING gui_agent.test: disk almost full")
    assert [row for row in screen.rows if "hello" in row] == ["you> hello world"]
    assert screen.cursor == (len(screen.rows) - 1, 10)  # where it was

    os.kill(terminal.pid, signal.SIGUSR2)
    terminal.read_until(b"WARNING gui_agent.test: from a thread")
    terminal.read_until(b"you> hello world")
    screen = screen_of(terminal)
    assert screen.rows[-1] == "you> hello world"
    assert screen.rows[-2].endswith(" WARNING gui_agent.test: from a thread")
    assert screen.rows[-3].endswith(" WARNING gui_agent.test: disk almost full")
    assert screen.cursor == (len(screen.rows) - 1, 10)

    terminal.type(b",\n")
    said = terminal.read_until(b"you said: ")
    assert terminal.read_until(b"you> ").startswith(b"hello, world \r\n")  # exactly as typed
    assert b"you> hello, world\r\n" in said
    terminal.type(b"/quit\n")
    terminal.read_until(b"handlers restored: True")
    assert terminal.exit_code() == 0


def test_typed_from_a_pipe_only_a_handler_writing_where_the_output_goes_is_swapped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Output goes to a terminal, but the lines come from a pipe: nothing is edited. A
    handler writing to that terminal is swapped (its records must start rows of their own
    there) and put back after; one writing to a file of its own is left as it is."""
    typed, typing = os.pipe()
    os.close(typing)  # nothing typed: the reader's thread reads the end at once
    master, slave = pty.openpty()
    root = logging.getLogger()
    with (
        open(typed, encoding="utf-8") as pipe,
        open(slave, "w", encoding="utf-8") as shown,
        open(tmp_path / "log", "w", encoding="utf-8") as elsewhere,
    ):
        monkeypatch.setattr(sys, "stdin", pipe)
        monkeypatch.setattr(sys, "stdout", shown)
        on_the_terminal = logging.StreamHandler(shown)
        in_a_file = logging.StreamHandler(elsewhere)
        root.addHandler(on_the_terminal)
        root.addHandler(in_a_file)

        async def chat() -> None:
            reader = ChatInput(asyncio.get_running_loop(), {"TERM": "xterm"})
            before = list(root.handlers)
            try:
                assert not reader.editing
                with logs_above_the_line(reader):
                    kept = [a is b for a, b in zip(root.handlers, before, strict=True)]
                    assert kept == [h is not on_the_terminal for h in before]
                assert all(a is b for a, b in zip(root.handlers, before, strict=True))
            finally:
                reader.close()

        try:
            asyncio.run(chat())
        finally:
            root.removeHandler(on_the_terminal)
            root.removeHandler(in_a_file)
            os.close(master)


def test_from_a_pipe_a_retry_warning_starts_a_line_and_the_reply_goes_on_below(
    tmp_path: Path,
) -> None:
    """`gui-agent chat < script 2>&1`: the server answers 429 once, so a warning is logged
    after the reply's `[Executor] ` was written, before its text. The warning is a line of
    its own, and the reply goes on below it under its label, not glued to the warning."""
    peer = ScriptedPeer().start()
    try:
        peer.script(
            Reply.json(
                429,
                openai_error(429, "slow down", "rate_limit_exceeded"),
                headers={"retry-after": "0"},
            ),
            Reply.sse(*openai_text_stream(["hello ", "there"])),
        )
        model = f"openai-compatible:{peer.url}/v1#m"
        folder = str(workspace(tmp_path))
        result = subprocess.run(
            [CLI, "chat", "--model", model, "--no-probe", "--workdir", folder],
            input="hi\n/quit\n",
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # as on a terminal: both in one place
            text=True,
            env=env(tmp_path),
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
    finally:
        peer.stop()
    out = result.stdout
    assert result.returncode == 0, out
    assert len(peer.requests) == 2, out  # it was retried
    lines = out.splitlines()
    warnings = [line for line in lines if "retrying in" in line]
    assert len(warnings) == 1, out
    assert re.match(r"\d{4}-\d\d-\d\d [\d:,]+ WARNING connectors\.", warnings[0]), out
    below = lines[lines.index(warnings[0]) + 1 :]
    # (the chat's own notice of the retry, on the reply's row, then the reply under its label)
    assert below[:2] == [
        "[Executor] ⟳ Rate limited (HTTP 429): asking again now (attempt 2 of 4)…",
        "[Executor] hello there",
    ], out
