"""`gui-agent chat` in a real pseudo-terminal: a log record written while a line is typed.

The record goes on rows of its own, above the line, and the line is drawn again below it
with the cursor where it was, so what was typed is neither cut in two nor lost; Enter then
sends exactly the typed text. Records logged by another thread are shown the same way.
When the chat ends the logging handlers are the ones the CLI installed, in their places.
From a pipe, a record that shows where the output does (`2>&1`) starts a line of its own,
and the reply it came in goes on below it; a handler writing elsewhere is left as it is.
A model call asked again is said once, by the chat's notice: the connector's record of the
retry is left out where the chat shows, and kept in a log written elsewhere.
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
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

from connectors.resilience import CircuitBreaker, RetryPolicy, resilient_stream
from gui_agent.exceptions import ModelRateLimited
from gui_agent.repl_input import ChatInput
from gui_agent.repl_logging import logs_above_the_line
from schema import Message, ModelResponse, ModelRetryNotice, ModelStreamPart, Role
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


def chat_through_a_retry(tmp_path: Path, *flags: str) -> str:
    """`gui-agent [flags] chat < script 2>&1`, both in one place as on a terminal, with a
    server that answers 429 once: what was shown."""
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
            [CLI, *flags, "chat", "--model", model, "--no-probe", "--workdir", folder],
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
    return out


def test_a_retry_is_said_once_by_the_chats_notice_not_also_by_a_logged_warning(
    tmp_path: Path,
) -> None:
    """The connector logs the retry (a server's log needs it), but the chat says it in its
    own notice: the warning is left out where the chat shows, the notice is there once."""
    out = chat_through_a_retry(tmp_path)
    assert "retrying in" not in out, out
    assert "WARNING" not in out, out
    assert out.count("Rate limited (HTTP 429)") == 1, out
    lines = out.splitlines()
    notice = "[Executor] ⟳ Rate limited (HTTP 429): asking again now (attempt 2 of 4)…"
    assert lines[lines.index(notice) + 1] == "[Executor] hello there", out


def test_from_a_pipe_a_log_record_starts_a_line_and_the_reply_goes_on_below(
    tmp_path: Path,
) -> None:
    """With INFO records shown, the record of the retried request's 429 answer is logged
    after the reply's `[Executor] ` was written, before its text. The record is a line of its
    own, and the reply goes on below it under its label, not glued to the record. (The
    retry's own warning is left out: the chat's notice says it.)"""
    out = chat_through_a_retry(tmp_path, "--log-level", "INFO")
    assert "retrying in" not in out, out  # (the notice says it, at every level)
    lines = out.splitlines()
    answered = [line for line in lines if "HTTP Request: POST" in line]
    assert len(answered) == 2, out
    assert re.match(r"\d{4}-\d\d-\d\d [\d:,]+ INFO ", answered[0]), out
    assert "429" in answered[0], out
    assert lines[lines.index(answered[0]) - 1] == "[Executor] ", out  # the row, ended
    below = lines[lines.index(answered[0]) + 1 :]
    # (the chat's own notice of the retry, on the reply's row, then the reply under its label)
    assert below[0] == "[Executor] ⟳ Rate limited (HTTP 429): asking again now (attempt 2 of 4)…"
    assert below[1:4] == ["[Executor] ", answered[1], "[Executor] hello there"], out


def test_the_record_of_a_retry_is_left_out_where_the_chat_shows_and_kept_elsewhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A retry `resilient_stream` logs (and announces with a notice) is not written where the
    chat's output goes; another record is; a log written to a file of its own keeps both."""
    typed, typing = os.pipe()
    os.close(typing)
    root = logging.getLogger()
    shown_path, log_path = tmp_path / "shown", tmp_path / "log"
    with (
        open(typed, encoding="utf-8") as pipe,
        open(shown_path, "w", encoding="utf-8") as shown,
        open(log_path, "w", encoding="utf-8") as elsewhere,
    ):
        monkeypatch.setattr(sys, "stdin", pipe)
        monkeypatch.setattr(sys, "stdout", shown)
        handlers = [logging.StreamHandler(shown), logging.StreamHandler(elsewhere)]
        for handler in handlers:
            root.addHandler(handler)

        async def no_wait(delay: float) -> None:
            return None

        async def chat() -> list[object]:
            answers = iter([ModelRateLimited("rate limited (HTTP 429)"), None])

            async def attempt() -> AsyncGenerator[ModelStreamPart, None]:
                error = next(answers)
                if error is not None:
                    raise error
                yield ModelResponse(message=Message(role=Role.ASSISTANT, content="hi"))

            reader = ChatInput(asyncio.get_running_loop(), {"TERM": "xterm"})
            try:
                with logs_above_the_line(reader):
                    logging.getLogger("gui_agent.test").warning("disk almost full")
                    stream = resilient_stream(
                        attempt,
                        provider="m",
                        retry=RetryPolicy(jitter=False, sleep=no_wait),
                        breaker=CircuitBreaker(),
                    )
                    return [part async for part in stream]
            finally:
                reader.close()

        try:
            parts = asyncio.run(chat())
        finally:
            for handler in handlers:
                root.removeHandler(handler)
    assert [type(part) for part in parts] == [ModelRetryNotice, ModelResponse]  # announced
    on_screen = shown_path.read_text(encoding="utf-8")
    assert "disk almost full" in on_screen
    assert "retrying in" not in on_screen
    logged = log_path.read_text(encoding="utf-8")
    assert "disk almost full" in logged
    assert "rate limited (HTTP 429); retrying in 0.50 s (attempt 2 of 4)" in logged


FAILING_AGENT = """
def bot(messages):
    raise RuntimeError("bot exploded")
"""


def chat_with_a_failing_agent(tmp_path: Path, *flags: str, apart: bool = False) -> tuple[str, str]:
    """`gui-agent [flags] chat --agent bot.py:bot` told `hello`, its agent raising: what was
    shown, with the log in the same place (as on a terminal) or, `apart`, on its own."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "bot.py").write_text(FAILING_AGENT)
    folder = str(workspace(tmp_path))
    argv = [CLI, *flags, "chat", "--agent", "bot.py:bot", "--model", "scripted:echo"]
    result = subprocess.run(
        [*argv, "--no-probe", "--workdir", folder],
        input="hello\n/quit\n",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if apart else subprocess.STDOUT,
        text=True,
        env=env(tmp_path),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + (result.stderr or "")
    return result.stdout, result.stderr or ""


def failing_agent_in_a_terminal(tmp_path: Path, *flags: str) -> str:
    """`gui-agent [flags] chat --agent bot.py:bot` in a pseudo-terminal, told `hello`, its
    agent raising: what the terminal was sent (the log shows there too)."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "bot.py").write_text(FAILING_AGENT)
    folder = str(workspace(tmp_path))
    argv = [CLI, *flags, "chat", "--agent", "bot.py:bot", "--model", "scripted:echo"]
    terminal = Terminal([*argv, "--no-probe", "--workdir", folder], tmp_path)
    terminal.read_until(b"you> ")
    terminal.type(b"hello\n")
    terminal.read_until(b"! agent_failed: ")
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0
    return terminal.seen.decode()


def test_a_failing_agents_record_is_one_readable_line_where_the_chat_shows(
    tmp_path: Path,
) -> None:
    """On a terminal, at the chat's own level. The record carried the traceback, escaped
    onto its one line: 1.5 kB of frames with literal \\n among the replies, above the
    chat's own `! agent_failed` line."""
    seen = failing_agent_in_a_terminal(tmp_path)
    [record] = [line for line in seen.splitlines() if " ERROR gui_agent.turn: " in line]
    assert record.endswith(
        "the OTHER agent failed: RuntimeError: bot exploded (--log-level DEBUG shows the traceback)"
    )
    assert "Traceback" not in seen and "\\n" not in seen
    assert "! agent_failed: RuntimeError: bot exploded" in seen


def whole_traceback(log: str) -> None:
    """`log` has the failing agent's record with its traceback whole: on its own lines,
    each after the first indented, not escaped onto one."""
    start = log.index("the OTHER agent failed: ")
    record = log[start : log.index("\n  RuntimeError: bot exploded\n", start)]
    assert record.startswith("the OTHER agent failed: Traceback (most recent call last):\n")
    assert '\n    File "' in record and '\n      raise RuntimeError("bot exploded")' in record
    assert "\\n" not in record


def test_a_failing_agents_traceback_is_kept_at_debug_and_in_a_log_of_its_own(
    tmp_path: Path,
) -> None:
    """It was kept, but escaped onto the record's one line (literal \\n), also at DEBUG and
    in a file: unreadable just where a person looks for what went wrong."""
    out, _ = chat_with_a_failing_agent(tmp_path / "debug", "--log-level", "DEBUG")
    whole_traceback(out)
    out, log = chat_with_a_failing_agent(tmp_path / "apart", apart=True)
    whole_traceback(log)  # stderr to a file of its own
    assert "ERROR" not in out
    out, _ = chat_with_a_failing_agent(tmp_path / "together")  # `2>&1 > transcript`
    whole_traceback(out)
    assert "(--log-level DEBUG shows the traceback)" not in out
    assert "! agent_failed: RuntimeError: bot exploded" in out
