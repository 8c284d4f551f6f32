"""How `gui-agent chat` ends when it is not asked to: `kill` (SIGTERM), a closed terminal
(SIGHUP), or a reader of its output that went away (`gui-agent chat | head`).

Each ends the chat in order, with the exit code a shell expects (128 + the signal), no
traceback, and nothing left running: the code a tool was running is stopped with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gui_agent.tools.files import PRIVATE_DIR
from tests.gui_agent.test_repl_errors import DRIVER, chat_argv, env, workspace
from tests.gui_agent.test_terminal_keys import CLI, Terminal

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def long_run(fifo: Path) -> dict[str, object]:
    """A tool call whose code says which process runs it through `fifo`, then keeps going far
    longer than the test: if it outlives the chat, it is still there when the test looks."""
    code = f"import os, time\nwith open({str(fifo)!r}, 'w') as f:\n"
    code += "    f.write(str(os.getpid()))\ntime.sleep(600)\n"
    return {"tool": "run_python", "args": {"code": code}}


def alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting to be reaped has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def ends_soon(pid: int, timeout_s: float = 5.0) -> bool:
    """Whether `pid` has ended, or ends within `timeout_s` (through its pidfd, no polling).
    The code is killed as the chat ends; when the chat had to kill its whole process group
    (the supervisor did not stop in time, as on a loaded machine) the kill may still be on
    its way as the chat exits. Code left running would still be there long after."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout_s)[0]) or not alive(pid)
    finally:
        os.close(fd)


@contextlib.contextmanager
def started_code(tmp_path: Path) -> Iterator[tuple[Path, list[int]]]:
    """A FIFO the tool's code reports its pid through; whatever it reported is killed after
    the test, so a failing test leaves nothing behind."""
    # (in /dev/shm, which the code may write to: it may not reach the test's folder)
    shared = Path("/dev/shm")
    fifo = (shared if shared.is_dir() else tmp_path) / f"gui-agent-started-{uuid.uuid4().hex}"
    os.mkfifo(fifo)
    pids: list[int] = []
    try:
        yield fifo, pids
    finally:
        fifo.unlink(missing_ok=True)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def wait_for_pid(fifo: Path) -> int:
    """The pid the code writes, once it runs (fails after 60 s: the code never started)."""
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO no writer has opened yet
    try:  # is not readable until one writes
        ready, _, _ = select.select([reader], [], [], 60)
        assert ready, "the tool's code never started"
        return int(os.read(reader, 64))
    finally:
        os.close(reader)


def test_sigterm_during_a_tool_run_stops_the_code_and_exits_143(tmp_path: Path) -> None:
    with started_code(tmp_path) as (fifo, pids):
        process = subprocess.Popen(
            chat_argv([long_run(fifo), "never shown"], workspace(tmp_path)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(tmp_path),
            cwd=tmp_path,
        )
        assert process.stdin is not None
        process.stdin.write(b"run it\ny\n")  # from a pipe, the next line answers the question
        process.stdin.flush()
        pids.append(wait_for_pid(fifo))
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
        said = f"exit {process.returncode}; {out[-600:]!r}; {err.decode(errors='replace')}"
        # the code the tool ran did not outlive the chat
        assert ends_soon(pids[0]), said
        assert process.returncode == 128 + signal.SIGTERM, said
        assert b"Traceback" not in err
        assert b"(SIGTERM: ending the chat)" in out


def test_sigterm_during_a_tool_run_leaves_nothing_of_the_run_in_the_chats_folder(
    tmp_path: Path,
) -> None:
    """`kill` while the code runs, in a chat without --workdir: the code ends, and the
    folder made for the chat goes, since the tools made nothing there. It held only what
    `run_python` keeps in the private folder (the script, temp and cache folders), and the
    chat said "the files of this chat stay in" a folder with no file of the person's."""
    folders = tmp_path / "data" / "workspaces" / "local"
    with started_code(tmp_path) as (fifo, pids):
        process = subprocess.Popen(
            [sys.executable, "-c", DRIVER, json.dumps([long_run(fifo), "never shown"])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(tmp_path),
            cwd=tmp_path,
        )
        assert process.stdin is not None
        process.stdin.write(b"run it\ny\n")
        process.stdin.flush()
        pids.append(wait_for_pid(fifo))
        assert list(folders.glob(f"*/{PRIVATE_DIR}/run_*.py"))  # the script the code runs
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
        said = f"exit {process.returncode}; {out[-600:]!r}; {err.decode(errors='replace')}"
        assert ends_soon(pids[0]), said
        assert process.returncode == 128 + signal.SIGTERM, said
        assert b"(SIGTERM: ending the chat)" in out
        assert b"stay in" not in out, said
        assert list(folders.iterdir()) == [], said
        assert b"Traceback" not in err


def running_code_in_a_terminal(tmp_path: Path, fifo: Path, pids: list[int]) -> Terminal:
    """A chat in a terminal whose tool call (approved with "y") runs `long_run`'s code; its
    pid is added to `pids` once it runs."""
    terminal = Terminal(chat_argv([long_run(fifo), "never shown"], workspace(tmp_path)), tmp_path)
    terminal.read_until(b"you> ")
    terminal.type(b"run it\n")
    terminal.read_until(b"allow?")
    terminal.type(b"y\n")
    pids.append(wait_for_pid(fifo))
    return terminal


def test_closing_the_terminal_during_a_tool_run_stops_the_code(tmp_path: Path) -> None:
    with started_code(tmp_path) as (fifo, pids):
        terminal = running_code_in_a_terminal(tmp_path, fifo, pids)
        os.close(terminal.fd)  # the window closes: the program gets SIGHUP
        _, status = os.waitpid(terminal.pid, 0)
        assert ends_soon(pids[0])
        assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGHUP


def test_ctrl_c_twice_during_a_tool_run_stops_the_turn_and_the_code(tmp_path: Path) -> None:
    """A person who sees no answer at once presses Ctrl-C again: the turn stops, the chat
    goes on, and the code is not left running. (Whether the second press meets the first
    Stop still ending the code depends on timing here; test_double_stop.py and
    test_run_python.py pin that case down.)"""
    with started_code(tmp_path) as (fifo, pids):
        terminal = running_code_in_a_terminal(tmp_path, fifo, pids)
        terminal.type(b"\x03")
        terminal.read_until(b"(stopping")
        terminal.type(b"\x03")  # at once: the first Stop is ending the code
        terminal.read_until(b"you> ")  # the turn stopped; the chat goes on
        assert not alive(pids[0])  # (the turn ends only once the code has ended)
        terminal.type(b"/quit\n")
        _, status = os.waitpid(terminal.pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0


def test_a_reader_that_leaves_ends_the_chat_quietly(tmp_path: Path) -> None:
    chat = subprocess.Popen(
        [CLI, "chat", "--model", "scripted:echo", "--no-probe", "--workdir", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(tmp_path),
        cwd=tmp_path,
    )
    assert chat.stdin is not None and chat.stdout is not None and chat.stderr is not None
    long_words = " ".join(["x" * 1000] * 100)  # the echo is more than a pipe holds
    chat.stdin.write(f"{long_words}\n/quit\n".encode())
    chat.stdin.close()
    assert chat.stdout.read(10) == b"model: scr"  # like `| head -c 10`, then leave
    chat.stdout.close()
    with chat.stderr:
        err = chat.stderr.read()
    assert chat.wait(timeout=60) == 128 + signal.SIGPIPE, err.decode()
    assert b"Traceback" not in err and b"Exception ignored" not in err
