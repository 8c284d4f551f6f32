"""`run_python`: run a model's Python code in a limited child process.

Each call writes the code to a script in the session folder's hidden `.gui_agent` folder and
runs it with this interpreter in isolated mode (`-I`), in a new session (its own process
group), with the session folder as working directory and HOME, a minimal environment (no
API keys or other secrets of the server) and resource limits the child sets on itself before
any of the code runs: address space, CPU seconds, file size, no core dumps and a cap on
extra processes.

On Linux the child is a supervisor (`_sandbox.child_main`): a child subreaper that runs the
code in a process of its own and, when the code ends, kills and reaps every process it
started, also those that left the process group with `setsid()`. On a timeout or a cancel
the server asks the supervisor to do the same with SIGTERM, and kills the process group
after a grace period. Before the first child starts, the server makes itself non-dumpable
(`protect_process`), so the code cannot read the server's environment, memory or open files
through /proc; a child that runs as root first gives up the capabilities that would get
around that (ptrace, sys_admin, perfmon, module loading, raw I/O, bpf).

On Linux 5.13 or later the child also confines the files the code may touch before it runs
(`_landlock`, with `PythonLimits.confine_files`): it may read the system's and Python's own
files and read, write and delete only in the session folder, so the server's data folder
(its signing key, its users, other sessions) and the home folder's secrets are out of reach.

What this does *not* confine, and what the model and the operator should know:

- The code runs as the server's user. Without Landlock (an older kernel, macOS) it can read,
  write and delete whatever that user can, outside the session folder too (the session
  folder is only its working directory): files with secrets that user can read (a `.env`
  file, ~/.ssh) are readable to it. With it or without, it can reach the network, and
  before Linux 6.12 (Landlock's scopes) signal the server's own processes. What Landlock
  leaves open is in the README: permissions, owner and times of files it cannot read, Unix
  sockets by path, /dev/shm, and root's files under the system's folders.
- The supervisor and the limits are a safety net for ordinary code, not a wall: code that
  kills its supervisor first can leave processes behind, and processes started through other
  services (systemd, cron, ssh) are not its descendants and are not killed.
- When the server runs as root, the code runs as root with every other power of root: it
  can change the whole system, the process-count limit does not apply to root, and it can
  still list (not open) the server's file descriptors.
- Real isolation needs a container, a virtual machine or a separate, unprivileged user.

Output (stdout and stderr interleaved) is read as it comes and only its head and tail are
kept. Every text the tool returns is valid UTF-8: output bytes that are not UTF-8 become
U+FFFD and file names that are not UTF-8 show those bytes as `\\xNN` escapes.
The output is returned as a terminal would have shown it at the end: without escape
sequences (colours, titles; the child's environment also asks for none with `NO_COLOR` and
`TERM=dumb`), and a line redrawn after `\\r` (a progress bar) as its last drawing only.

A non-zero exit, a kill or a timeout is reported with `is_error=True`, so the model notices
that its code failed; the output is still shown in full (up to the cap).
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import contextlib
import errno
import functools
import logging
import math
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gui_agent.cancels import uninterrupted
from gui_agent.exceptions import PathEscape, ToolExecutionError
from gui_agent.terminal_text import terminal_view
from gui_agent.tools import _sandbox
from gui_agent.tools._landlock import landlock_abi
from gui_agent.tools._sandbox import (
    OutputCapture,
    child_environment,
    kill_group,
    process_limit,
    protect_process,
    supervised,
)
from gui_agent.tools.definition import ApprovalView, Tool, ToolContext, ToolOutput, tool
from gui_agent.tools.files import PRIVATE_DIR, display_path, open_regular
from schema import ImagePart, MessageType

logger = logging.getLogger(__name__)

_MIB = 1024 * 1024
_SNAPSHOT_LIMIT = 20_000
_LISTED_FILES = 100
_KEPT_FILES = 1_000
"""Changed files named in the result's metadata (the rest are counted): up to 20,000 could
change in one run, and the list is kept with the message and sent in every event of it."""
_SETTLE_S = 5.0
_STOP_GRACE_S = 2.0

# Runs in the child before the code: load the sandbox module by path (importing the
# gui_agent package would be slow and is not needed there) and hand over to it.
_BOOTSTRAP = """\
import sys
def _gui_agent_start():
    import importlib.util
    spec = importlib.util.spec_from_file_location("_gui_agent_sandbox", sys.argv[1])
    sandbox = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sandbox)
    sandbox.child_main(sys.argv[2:])
_gui_agent_start()
"""


@dataclass(frozen=True, slots=True)
class PythonLimits:
    """Limits of one `run_python` call."""

    wall_timeout_s: float = 30.0
    memory_bytes: int = 1024 * _MIB
    file_size_bytes: int = 50 * _MIB
    extra_processes: int = 64
    output_bytes: int = 16_000
    image_bytes: int = 2 * _MIB
    max_images: int = 4
    confine_files: bool = True
    """Let the code read only the system's and Python's files, and read and write only in
    the session folder, where the kernel can (`files_confined`)."""


UNCONFINED_ENV = "GUI_AGENT_UNCONFINED_CODE"
"""Set to 1 (or true, yes, on), run_python's code may touch every file of the server's
user (a machine of one's own where the code should read files elsewhere); see
`files_confined`."""


def files_confined() -> bool:
    """Whether run_python's code is confined to its session folder: on Linux with Landlock
    (kernel 5.13 or later; see `_landlock`), unless UNCONFINED_ENV is 1."""
    if os.environ.get(UNCONFINED_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        _said_unconfined("%s is set", UNCONFINED_ENV)
        return False
    if landlock_abi(_sandbox.libc()) < 1:
        _said_unconfined("this system cannot confine it (no Landlock)")
        return False
    return True


@functools.cache
def _said_unconfined(why: str, *args: object) -> None:
    """Log once why code is not confined."""
    logger.warning(
        "run_python: the code can read and change all the files of the server's user: " + why,
        *args,
    )


def _code_view(arguments: dict[str, Any]) -> ApprovalView:
    return ApprovalView("Run Python code", str(arguments.get("code", "")), "python")


@dataclass(frozen=True, slots=True)
class _Script:
    """A run's script, written in the private folder of the chat's folder `root`."""

    root: Path
    """The chat's folder, resolved: where the code runs, and all it may write to."""
    private: Path
    name: str

    def remove(self) -> None:
        """Delete the script, inside the private folder only: if the code put a link in the
        folder's place, the script went with the folder, and nothing is followed."""
        try:
            folder = _opened_folder(self.private, create=False)
        except OSError:
            return
        try:
            os.unlink(self.name, dir_fd=folder)
        except FileNotFoundError:
            return
        finally:
            os.close(folder)


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _opened_folder(path: Path | str, *, dir_fd: int | None = None, create: bool = True) -> int:
    """`path` (under `dir_fd`) opened as a folder of its own, never through a link: a link
    or a file the code left in its place is removed and the folder made anew. (Code that
    swapped `.gui_agent` for a link to another chat's made the next run write its script
    there and run in that chat's folder.)"""
    for _ in range(3):
        try:
            return os.open(path, _FOLDER_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, dir_fd=dir_fd)
        except OSError as error:
            if error.errno not in (errno.ELOOP, errno.ENOTDIR) or not create:
                raise
            os.unlink(path, dir_fd=dir_fd)
    raise ToolExecutionError(f"run_python could not make its folder {str(path)!r}")


def _prepare(workdir: Path, code: str) -> _Script:
    """Create the private folders; write the script (nothing through a link)."""
    workdir.mkdir(parents=True, exist_ok=True)  # (a new chat's folder is made at its first run)
    root = workdir.resolve()
    folder = _opened_folder(root / PRIVATE_DIR)
    try:
        for name in ("tmp", "cache"):
            os.close(_opened_folder(name, dir_fd=folder))
        name = f"run_{uuid.uuid4().hex[:12]}.py"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(name, flags, 0o600, dir_fd=folder), "w", encoding="utf-8") as out:
            out.write(code)
    finally:
        os.close(folder)
    return _Script(root, root / PRIVATE_DIR, name)


def _snapshot(workdir: Path) -> dict[str, tuple[int, int, int]]:
    """Relative path -> (mode, mtime_ns, size) of everything but folders, without following
    symlinks (a link is listed as a link) and skipping the private folder."""
    found: dict[str, tuple[int, int, int]] = {}
    pending = [workdir]
    while pending and len(found) < _SNAPSHOT_LIMIT:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if folder == workdir and entry.name == PRIVATE_DIR:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            relative = Path(entry.path).relative_to(workdir).as_posix()
            found[relative] = (info.st_mode, info.st_mtime_ns, info.st_size)
    return found


def _load_images(workdir: Path, paths: list[str], limits: PythonLimits) -> list[str]:
    """Base64 of the small PNG files among `paths`, at most `max_images` of them.

    Only regular files count: links are not followed and nothing is opened that could block.
    """
    images: list[str] = []
    for relative in paths:
        if len(images) >= limits.max_images or not relative.lower().endswith(".png"):
            continue
        try:
            with open_regular(workdir / relative) as handle:
                if os.fstat(handle.fileno()).st_size < limits.image_bytes:
                    images.append(base64.b64encode(handle.read()).decode("ascii"))
        except (OSError, PathEscape):  # (a second hard link: not shown, the run still is)
            continue
    return images


def _status(returncode: int | None, timed_out: bool, output: str, limits: PythonLimits) -> str:
    if timed_out:
        return f"killed: timed out after {limits.wall_timeout_s:g}s"
    if returncode is None:
        return "killed"
    if returncode < 0:
        number = -returncode
        if number == signal.SIGXCPU:
            return f"killed: CPU time limit reached ({math.ceil(limits.wall_timeout_s) + 1}s)"
        name = signal.Signals(number).name if number in signal.valid_signals() else number
        if number in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT):
            return (
                f"killed by {name}: a crash, or the memory limit of "
                f"{limits.memory_bytes // _MIB} MiB reached"
            )
        return f"killed by {name}"
    last_line = output.rstrip().rsplit("\n", 1)[-1]
    if returncode != 0 and last_line.startswith("MemoryError"):
        return (
            f"exit code {returncode} — memory limit of {limits.memory_bytes // _MIB} MiB "
            "reached (MemoryError)"
        )
    return f"exit code {returncode}"


class _ChildProtocol(asyncio.SubprocessProtocol):
    """Feeds output straight into a bounded capture, and to `show` as text (what the people
    watching see as it comes); signals exit and pipe close apart.

    The two differ when the code leaves a background process holding the output pipe.
    """

    def __init__(self, capture: OutputCapture, show: Callable[[str], None] | None) -> None:
        self.capture = capture
        self.show = show
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        chunk = data.encode() if isinstance(data, str) else data
        self.capture.feed(chunk)
        if self.show is not None:
            self.show(self.decoder.decode(chunk))

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


async def _settle(protocol: _ChildProtocol, pid: int) -> None:
    """Make sure nothing of the run is left; wait until it is reaped and the pipe closed.

    A supervisor that is still running is asked to kill the code and everything it started
    (SIGTERM); then the process group is killed, in case the supervisor is gone or stuck.
    """
    if supervised() and not protocol.exited.is_set():
        _signal(pid, signal.SIGTERM)
        try:
            async with asyncio.timeout(_STOP_GRACE_S):
                await protocol.exited.wait()
        except TimeoutError:
            logger.warning("run_python: supervisor %s did not stop on SIGTERM", pid)
    kill_group(pid)
    try:
        async with asyncio.timeout(_SETTLE_S):
            await protocol.exited.wait()
        async with asyncio.timeout(_SETTLE_S):
            await protocol.closed.wait()
    except TimeoutError:
        logger.warning("run_python: pid %s or its output pipe did not close after SIGKILL", pid)


async def _settle_to_the_end(protocol: _ChildProtocol, pid: int) -> None:
    """`_settle`, run to its end even when the call is cancelled again meanwhile (Stop
    pressed twice, or the session closing while a Stop ends the code): cut short, it left
    the code running, and whatever it started. It takes a few seconds at most; a cancel
    that came meanwhile is raised once it is done."""
    settling = asyncio.ensure_future(_settle(protocol, pid))
    if await uninterrupted(settling):
        raise asyncio.CancelledError
    settling.result()


async def _spawned(
    spawning: asyncio.Future[tuple[asyncio.SubprocessTransport, _ChildProtocol]],
) -> tuple[asyncio.SubprocessTransport, _ChildProtocol]:
    """The started process, waited for to the end even when the call is cancelled meanwhile.

    asyncio connects a new process's pipes after it has started. A cancel that comes then
    (a Stop while the loop is busy) makes asyncio kill the supervisor alone, with SIGKILL,
    and the code the supervisor had started ran on, with nobody left to end it. Here the
    start is let finish; then a cancelled call ends the run as any stopped run does
    (`_settle_to_the_end`), and the cancel is raised."""
    if not await uninterrupted(spawning):
        return spawning.result()
    if spawning.cancelled() or spawning.exception() is not None:
        raise asyncio.CancelledError  # nothing started: the Stop is all there is to say
    transport, protocol = spawning.result()
    try:
        await _settle_to_the_end(protocol, transport.get_pid())
    finally:
        transport.close()
    raise asyncio.CancelledError


def _signal(pid: int, number: int) -> None:
    """Signal a child that has not been reaped yet (so its pid cannot have been reused)."""
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        return


async def run_code(
    code: str,
    workdir: Path,
    limits: PythonLimits,
    *,
    partial: list[str] | None = None,
    show: Callable[[str], None] | None = None,
) -> ToolOutput:
    """Run `code` as described in the module docstring; the tool's implementation. When a
    Stop ends the run, what the code had printed goes in `partial` (`ToolContext.partial`).
    `show` gets what the code prints as it prints it (`ToolContext.show`)."""
    if os.name != "posix":
        raise ToolExecutionError("run_python needs a POSIX system (Linux or macOS)")
    protect_process()  # before any child exists: the code must not read our /proc files
    preparing = asyncio.ensure_future(asyncio.to_thread(_prepare, workdir, code))
    if await uninterrupted(preparing):  # (the thread wrote the script all the same)
        if not preparing.cancelled() and preparing.exception() is None:
            await asyncio.to_thread(preparing.result().remove)
        raise asyncio.CancelledError
    script = preparing.result()
    root, private = script.root, script.private
    capture = OutputCapture(limits.output_bytes)
    timed_out = False
    try:
        before = await asyncio.to_thread(_snapshot, root)
        nproc = await asyncio.to_thread(process_limit, limits.extra_processes)
        spawning = asyncio.ensure_future(
            asyncio.get_running_loop().subprocess_exec(
                lambda: _ChildProtocol(capture, show),
                sys.executable,
                "-I",
                "-B",
                "-u",
                "-X",
                "utf8",
                "-c",
                _BOOTSTRAP,
                _sandbox.__file__,
                str(limits.memory_bytes),
                str(math.ceil(limits.wall_timeout_s) + 1),
                str(limits.file_size_bytes),
                str(nproc),
                "1" if limits.confine_files and files_confined() else "0",
                f"{PRIVATE_DIR}/{script.name}",  # relative: tracebacks stay short
                cwd=root,
                env=child_environment(root, private),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        transport, protocol = await _spawned(spawning)
        pid = transport.get_pid()
        logger.debug("run_python started pid %s in %s", pid, root)
        try:
            async with asyncio.timeout(limits.wall_timeout_s):
                await protocol.exited.wait()
        except TimeoutError:
            timed_out = True
        finally:
            try:
                await _settle_to_the_end(protocol, pid)
            finally:
                transport.close()
        returncode = transport.get_returncode()
    except asyncio.CancelledError:
        printed = terminal_view(capture.text())
        if partial is not None and printed.strip():
            partial.append(printed)
        raise
    finally:
        await asyncio.to_thread(script.remove)

    after = await asyncio.to_thread(_snapshot, root)
    changed_paths = sorted(path for path, stamp in after.items() if before.get(path) != stamp)
    images = await asyncio.to_thread(_load_images, root, changed_paths, limits)
    changed = [display_path(path) for path in changed_paths]

    # valid UTF-8 (undecodable bytes are replaced), as a terminal showed it at the end
    output = terminal_view(capture.text())
    status = _status(returncode, timed_out, output, limits)
    lines = [output.rstrip("\n") if output.strip() else "(no output)"]
    if changed:
        shown = ", ".join(changed[:_LISTED_FILES])
        more = f" and {len(changed) - _LISTED_FILES} more" if len(changed) > _LISTED_FILES else ""
        lines.append(f"[files created or changed: {shown}{more}]")
    lines.append(status)
    return ToolOutput(
        content="\n".join(lines),
        message_type=MessageType.CONSOLE,
        images=tuple(ImagePart(media_type="image/png", data=data) for data in images),
        metadata={
            "exit_code": None if timed_out else returncode,
            "timed_out": timed_out,
            "status": status,
            "files_created": changed[:_KEPT_FILES],
            "files_not_listed": max(len(changed) - _KEPT_FILES, 0),
            "images_attached": len(images),
            "output_bytes_dropped": capture.dropped,
        },
        is_error=timed_out or returncode != 0,
    )


def python_tool(limits: PythonLimits | None = None, *, name: str = "run_python") -> Tool:
    """A `run_python` tool with other limits (the module-level `run_python` uses defaults).

    The code runs as the server's user, not in a container: see the module docstring for
    what is confined and what is not. Run the server as a separate, unprivileged user or in
    a container when the code must not reach the rest of the machine.
    """
    chosen = limits or PythonLimits()

    async def run(ctx: ToolContext, code: str) -> ToolOutput:
        """Run Python code.

        Args:
            code: The complete Python program to run.
        """
        return await run_code(code, ctx.workdir, chosen, partial=ctx.partial, show=ctx.show)

    description = (
        "Run Python 3 code in a fresh process, with the session folder as working directory, "
        "and return what it printed (stdout and stderr) and its exit code. Each call starts a "
        "new interpreter: variables and imports do not carry over, so print what you need to "
        "see. Files written to the working directory stay for later calls; save plots as PNG "
        "files (plt.savefig('plot.png')) to show them. There is no input(). Processes the code "
        "starts are killed when it ends. Limits: "
        f"{chosen.wall_timeout_s:g}s wall time, {chosen.memory_bytes // _MIB} MiB memory. "
        + (
            "Files: the code may read the system's and Python's own files, and read and write "
            "only inside the session folder; reading or writing any other path is refused "
            "(permission denied)."
            if chosen.confine_files and files_confined()
            else "This is not an isolated sandbox: the code runs as the server's user and can "
            "read and change that user's files outside the session folder, so work inside the "
            "session folder only."
        )
    )
    return tool(
        run,
        name=name,
        description=description,
        destructive=True,
        timeout_s=chosen.wall_timeout_s + 15.0,
        max_output_chars=chosen.output_bytes + 4_000,
        approval_view=_code_view,
    )


run_python = python_tool()
