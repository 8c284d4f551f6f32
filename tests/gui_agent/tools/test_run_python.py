"""run_python: real child processes, confined, limited, and killed when they must stop."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import select
import signal
import sys
import threading
import time
from asyncio.base_subprocess import BaseSubprocessTransport
from pathlib import Path
from textwrap import dedent

import pytest

from gui_agent.tools import ToolContext, ToolRegistry, execute_tool, python_runner, run_python
from gui_agent.tools.files import PRIVATE_DIR
from gui_agent.tools.python_runner import PythonLimits, python_tool
from schema import MessageType, ToolCall, ToolResult

pytestmark = pytest.mark.skipif(os.name != "posix", reason="run_python needs POSIX")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path / "session"


async def run(workdir: Path, code: str, *, limits: PythonLimits | None = None) -> ToolResult:
    runner = run_python if limits is None else python_tool(limits)
    ctx = ToolContext(session_id="s", run_id="r", call_id="c", workdir=workdir)
    call = ToolCall(id="c", name="run_python", arguments=json.dumps({"code": dedent(code)}))
    return await execute_tool(ToolRegistry([runner]), call, ctx)


def is_gone(pid: int) -> bool:
    """True when the process has exited (a zombie nobody reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith(("Z", "X"))
    except (OSError, IndexError):
        return True


def wait_gone(pid: int, timeout_s: float = 5.0) -> bool:
    """Wait for a process to exit through its pidfd (no polling)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout_s)
        return bool(readable)
    finally:
        os.close(fd)


async def test_prints_output_and_the_exit_code(workdir: Path) -> None:
    result = await run(workdir, "import sys\nprint('hello')\nprint('oops', file=sys.stderr)")
    assert not result.is_error
    assert result.message_type is MessageType.CONSOLE
    assert result.content == "hello\noops\nexit code 0"
    assert result.metadata["exit_code"] == 0
    assert result.metadata["files_created"] == []
    assert workdir.is_dir()  # created when missing


async def test_a_failing_program_is_an_error_with_its_traceback(workdir: Path) -> None:
    result = await run(workdir, "print('before')\nraise ValueError('boom')")
    assert result.is_error
    assert result.metadata["exit_code"] == 1
    lines = result.content.splitlines()
    assert lines[0] == "before"
    assert lines[1] == "Traceback (most recent call last):"
    assert "runpy" not in result.content  # only the user's own frames
    assert lines[-2:] == ["ValueError: boom", "exit code 1"]

    exited = await run(workdir, "import sys\nsys.exit(7)")
    assert exited.is_error
    assert exited.content == "(no output)\nexit code 7"


async def test_reports_files_it_created_and_attaches_small_pngs(workdir: Path) -> None:
    workdir.mkdir()
    (workdir / "untouched.txt").write_text("same")
    (workdir / "changed.txt").write_text("old")
    (workdir / "helper.py").write_text("VALUE = 42\n")
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(50))
    code = f"""
        import helper
        from pathlib import Path
        Path('out').mkdir()
        Path('out/result.csv').write_text('a,b')
        Path('changed.txt').write_text('new content')
        Path('plot.png').write_bytes({png!r})
        print(helper.VALUE)
    """
    result = await run(workdir, code)
    assert not result.is_error, result.content
    assert result.metadata["files_created"] == ["changed.txt", "out/result.csv", "plot.png"]
    assert result.content == (
        "42\n[files created or changed: changed.txt, out/result.csv, plot.png]\nexit code 0"
    )
    assert len(result.images) == 1
    assert result.images[0].media_type == "image/png"
    assert base64.b64decode(result.images[0].data or "") == png
    assert not list((workdir / ".gui_agent").glob("*.py"))  # the script is cleaned up


async def test_an_infinite_loop_is_killed_at_the_wall_timeout(workdir: Path) -> None:
    code = "print('started', flush=True)\nwhile True:\n    pass"
    result = await run(workdir, code, limits=PythonLimits(wall_timeout_s=1.0))
    assert result.is_error
    assert result.metadata["timed_out"] is True
    assert result.metadata["exit_code"] is None
    assert result.content == "started\nkilled: timed out after 1s"


async def test_allocating_past_the_memory_limit_is_reported(workdir: Path) -> None:
    result = await run(workdir, "data = bytearray(2 * 1024 ** 3)\nprint('allocated')")
    assert result.is_error
    assert "allocated" not in result.content
    assert "MemoryError" in result.content
    assert "memory limit of 1024 MiB reached" in result.content.splitlines()[-1]


async def test_writing_past_the_file_size_limit_fails(workdir: Path) -> None:
    limits = PythonLimits(file_size_bytes=1024 * 1024)
    result = await run(
        workdir, "open('big.bin', 'wb').write(b'x' * 3 * 1024 * 1024)", limits=limits
    )
    assert result.is_error
    assert "File too large" in result.content
    assert (workdir / "big.bin").stat().st_size <= 1024 * 1024


async def test_the_servers_secrets_are_not_visible(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-for-children")
    monkeypatch.setenv("GUI_AGENT_JWT_SECRET", "jwt-test-secret")
    code = """
        import json, os
        print(json.dumps(dict(os.environ)))
    """
    result = await run(workdir, code)
    env = json.loads(result.content.splitlines()[0])
    assert "OPENAI_API_KEY" not in env
    assert "sk-test-not-for-children" not in result.content
    assert "jwt-test-secret" not in result.content
    assert env["HOME"] == str(workdir.resolve())
    assert env["MPLBACKEND"] == "Agg"


async def test_huge_output_keeps_head_and_tail(workdir: Path) -> None:
    code = "import sys\nprint('FIRST')\nsys.stdout.write('x' * 10_000_000)\nprint()\nprint('LAST')"
    result = await run(workdir, code)
    assert not result.is_error
    assert result.content.startswith("FIRST\n")
    assert result.content.endswith("LAST\nexit code 0")
    assert "bytes of output omitted]" in result.content
    assert len(result.content) < run_python.max_output_chars
    assert result.metadata["output_bytes_dropped"] > 9_900_000


REPORTS_ITS_PID = """
    import os, socket
    with socket.create_connection(("127.0.0.1", PORT)) as conn:
        conn.sendall(f"{os.getpid()}\\n".encode())
    while True:
        pass
"""
"""Code that sends its pid to the local port in place of PORT (see `_started`), then keeps
the CPU busy until it is killed."""


async def _started(workdir: Path, code: str) -> tuple[asyncio.Task[ToolResult], list[int]]:
    """`code` running in a call of its own, once it has sent a line of pids to the local
    port it finds in place of PORT; the call's task and those pids."""
    lines: asyncio.Queue[bytes] = asyncio.Queue()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await lines.put(await reader.readline())
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        task = asyncio.create_task(run(workdir, code.replace("PORT", str(port))))
        async with asyncio.timeout(10):
            line = await lines.get()
    return task, [int(pid) for pid in line.split()]


async def test_cancelling_kills_and_reaps_the_process(workdir: Path) -> None:
    task, (pid,) = await _started(workdir, REPORTS_ITS_PID)
    assert not is_gone(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ProcessLookupError):  # killed and reaped, not a zombie
        os.kill(pid, 0)


async def test_background_processes_do_not_outlive_the_run(workdir: Path) -> None:
    code = """
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print(child.pid)
    """
    result = await run(workdir, code)
    assert not result.is_error, result.content
    pid = int(result.content.splitlines()[0])
    assert await asyncio.to_thread(wait_gone, pid)


def test_approval_view_and_schema_show_the_code() -> None:
    schema = run_python.schema
    assert schema.destructive
    assert schema.parameters["required"] == ["code"]
    assert list(schema.parameters["properties"]) == ["code"]
    assert "30s wall time" in schema.description
    assert run_python.timeout_s is not None and run_python.timeout_s > 30


linux_only = pytest.mark.skipif(sys.platform != "linux", reason="the supervisor is Linux-only")

# Forks a grandchild that leaves the process group with setsid(), keeps the output pipe
# open and tells its pid through a pipe; the code itself then returns at once.
DETACHED = """
    import os, time
    read_end, write_end = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(write_end, str(os.getpid()).encode())
            time.sleep(60)
        os._exit(0)
    print(os.read(read_end, 20).decode(), flush=True)
"""


@linux_only
async def test_processes_that_left_the_process_group_are_killed_when_the_code_ends(
    workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    started = time.perf_counter()
    result = await run(workdir, DETACHED)
    elapsed = time.perf_counter() - started
    assert not result.is_error, result.content
    pid = int(result.content.splitlines()[0])
    with pytest.raises(ProcessLookupError):  # killed and reaped before the call returned
        os.kill(pid, 0)
    assert elapsed < 3  # no wait for a pipe that a survivor held open
    assert "did not close" not in caplog.text


@linux_only
async def test_a_timeout_kills_processes_that_left_the_process_group(workdir: Path) -> None:
    code = dedent(DETACHED) + "while True:\n    pass\n"
    started = time.perf_counter()
    result = await run(workdir, code, limits=PythonLimits(wall_timeout_s=1.0))
    assert time.perf_counter() - started < 4
    assert result.metadata["timed_out"] is True
    pid = int(result.content.splitlines()[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@linux_only
async def test_the_code_gets_the_signals_a_server_started_in_the_background_ignores(
    workdir: Path,
) -> None:
    """A script's `gui-agent serve &` ignores SIGINT and SIGQUIT (and nohup SIGHUP); an
    ignored signal stays ignored across exec, but the code gets the usual handling."""
    ignored = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)
    before = [signal.signal(number, signal.SIG_IGN) for number in ignored]
    try:
        interrupted = await run(workdir, "import os, signal\nos.killpg(0, signal.SIGINT)\n")
        hung_up = await run(workdir, "import os, signal\nos.kill(os.getpid(), signal.SIGHUP)\n")
    finally:
        for number, handler in zip(ignored, before, strict=True):
            signal.signal(number, handler)
    assert interrupted.content.splitlines()[-2:] == ["KeyboardInterrupt", "exit code 1"]
    assert hung_up.is_error and "SIGHUP" in hung_up.content


@linux_only
async def test_signals_to_the_whole_group_reach_the_code_not_the_supervisor(
    workdir: Path,
) -> None:
    interrupted = await run(workdir, "import os, signal\nos.killpg(0, signal.SIGINT)\n")
    assert interrupted.is_error
    assert interrupted.content.splitlines()[-2:] == ["KeyboardInterrupt", "exit code 1"]
    terminated = await run(workdir, "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)")
    assert terminated.metadata["exit_code"] == -signal.SIGTERM
    assert terminated.content == "(no output)\nkilled by SIGTERM"
    crashed = await run(workdir, "import ctypes\nctypes.string_at(0)")
    assert crashed.content.endswith(
        "killed by SIGSEGV: a crash, or the memory limit of 1024 MiB reached"
    ), crashed.content


@pytest.mark.skipif(sys.platform != "linux", reason="Linux file names are bytes")
async def test_file_names_and_output_that_are_not_utf8_come_back_as_valid_text(
    workdir: Path,
) -> None:
    code = """
        import sys
        open(b'caf\\xe9.txt', 'wb').write(b'x')
        sys.stdout.buffer.write(b'bad \\xff byte\\n')
    """
    result = await run(workdir, code)
    assert not result.is_error, result.content
    assert result.metadata["files_created"] == ["caf\\xe9.txt"]
    assert (
        result.content == "bad \ufffd byte\n[files created or changed: caf\\xe9.txt]\nexit code 0"
    )
    assert "caf\\\\xe9.txt" in result.model_dump_json()  # no lone surrogate to choke on


async def test_links_and_pipes_the_code_makes_are_listed_but_not_opened(
    workdir: Path, tmp_path: Path
) -> None:
    outside_png = tmp_path / "elsewhere.png"
    outside_png.write_bytes(b"\x89PNG\r\n\x1a\n")
    code = f"""
        import os
        os.symlink({str(outside_png)!r}, 'linked.png')
        os.symlink('/etc', 'etc')
        os.mkfifo('pipe.png')
    """
    async with asyncio.timeout(10):
        result = await run(workdir, code)
    assert not result.is_error, result.content
    assert result.metadata["files_created"] == ["etc", "linked.png", "pipe.png"]
    assert result.images == ()  # neither the link nor the pipe was read


@linux_only
async def test_a_second_cancel_while_the_first_is_ending_the_code_still_ends_all_of_it(
    workdir: Path,
) -> None:
    """Stop pressed twice (or a Stop, then the chat closing): the second cancel comes while
    the first one waits for the supervisor to end the code. The code, and a process it
    started that left its process group, must still be killed and reaped."""
    code = dedent(DETACHED).replace("print(os.read(read_end, 20).decode(), flush=True)\n", "")
    code += dedent(
        """
        import socket
        detached = os.read(read_end, 20).decode()
        with socket.create_connection(("127.0.0.1", PORT)) as conn:
            conn.sendall(f"{os.getpid()} {detached}\\n".encode())
        while True:
            pass
        """
    )
    task, pids = await _started(workdir, code)
    assert len(pids) == 2 and not any(is_gone(pid) for pid in pids)
    task.cancel()
    for _ in range(3):  # the first cancel is being handled: the supervisor was asked
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for pid in pids:  # the code and what it started: killed and reaped
        assert await asyncio.to_thread(wait_gone, pid), pid
    with pytest.raises(ProcessLookupError):
        os.kill(pids[0], 0)


@linux_only
async def test_a_stop_while_the_process_is_being_started_still_ends_the_code(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel that comes after the process started but before asyncio has connected its
    pipes (a Stop while the loop is busy, as on a loaded machine). asyncio then kills the
    supervisor alone, and the code it had started ran on. Here the pipes wait until the code
    runs and the cancel has come: the code must end all the same."""
    connect = BaseSubprocessTransport._connect_pipes
    cancelled = asyncio.Event()

    async def connect_late(self: BaseSubprocessTransport, waiter: asyncio.Future[None]) -> None:
        await cancelled.wait()
        await connect(self, waiter)

    monkeypatch.setattr(BaseSubprocessTransport, "_connect_pipes", connect_late)
    task, (pid,) = await _started(workdir, REPORTS_ITS_PID)
    try:
        task.cancel()
        await asyncio.sleep(0)  # the cancel reaches the start
        cancelled.set()
        # (The code's own time limit, 30 s, would end it at last: a Stop must not wait so.)
        done, _ = await asyncio.wait({task}, timeout=20)
        assert done, "the Stop did not end the run: it waited for the code's time limit"
        with pytest.raises(asyncio.CancelledError):
            task.result()
        assert await asyncio.to_thread(wait_gone, pid), "the code outlived the Stop"
    finally:  # without the fix the code would run on (a busy loop): end it here
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def test_a_stop_while_the_script_is_being_written_leaves_no_script(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code is written to a script by a worker thread, which a cancel cannot stop: a Stop
    that comes meanwhile must not leave the script behind in the session's folder."""
    prepare = python_runner._prepare
    writing, go_on, written = threading.Event(), threading.Event(), threading.Event()

    def prepare_late(folder: Path, code: str) -> python_runner._Script:
        writing.set()
        go_on.wait(30)
        try:
            return prepare(folder, code)
        finally:
            written.set()

    monkeypatch.setattr(python_runner, "_prepare", prepare_late)
    task = asyncio.create_task(run(workdir, "print('never run')"))
    assert await asyncio.to_thread(writing.wait, 30)
    task.cancel()
    await asyncio.sleep(0)  # the cancel reaches the call
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(written.wait, 30)  # (the thread is done writing)
    assert list((workdir / PRIVATE_DIR).glob("*.py")) == []
