"""Pieces of the child-process sandbox.

Server side: the child's environment, output capture, the process-count limit, killing a
process group, and `protect_process`, which hides this process's memory and environment
from other processes of the same user.

Child side: `child_main` runs inside the child, before any of the model's code. This file
is loaded there by path (not through the `gui_agent` package), so it imports only the
standard library. On Linux the child becomes a *supervisor*: a child subreaper that forks
the process which runs the code and, when that process ends (or the server asks it to stop
with SIGTERM), kills and reaps every process the code started, including those that left
the process group with `setsid()`, before it exits with the code's own exit status.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import sys
from pathlib import Path

# Every run_python child loads this module before the code runs, so it imports at the top
# only what the child needs: logging and typing (~6 ms per call) are imported where used.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
    from typing import NoReturn


def _logger() -> logging.Logger:
    import logging

    return logging.getLogger(__name__)


_PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "TZ")

# prctl(2) options and capability numbers from <linux/prctl.h> and <linux/capability.h>.
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_SET_CHILD_SUBREAPER = 36
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_LOWER = 3
_CAP_VERSION_3 = 0x20080522
# Capabilities that let a process read other processes' memory and /proc files or the
# kernel's memory: sys_module, sys_rawio, sys_ptrace, sys_admin, perfmon, bpf. Any of
# sys_ptrace, sys_admin and perfmon is enough to read a non-dumpable process's environ.
_INSPECTION_CAPS = (16, 17, 19, 21, 38, 39)

_SUPERVISOR_IGNORES = ("SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM")
_CODE_DEFAULTS = ("SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGTERM")
"""Signals whose default action the code gets, whatever the server inherited."""
_CLEANUP_POLL_S = 0.1


def supervised() -> bool:
    """Whether children run under a supervisor that SIGTERM asks to clean up (Linux)."""
    return sys.platform.startswith("linux")


# --- server side ---------------------------------------------------------------------------


def child_environment(workdir: Path, private: Path) -> dict[str, str]:
    """A minimal environment: nothing of the server's (API keys, tokens) leaks in.

    HOME is the session folder; temp and cache folders live in its private folder so they
    do not show up as files the code created.
    """
    env = {name: os.environ[name] for name in _PASSED_THROUGH if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        HOME=str(workdir),
        PYTHONIOENCODING="utf-8",
        PYTHONUNBUFFERED="1",
        PYTHONDONTWRITEBYTECODE="1",
        MPLBACKEND="Agg",
        # Output goes to a pipe and on to a page: no colours, no cursor tricks, please.
        TERM="dumb",
        NO_COLOR="1",
        TMPDIR=str(private / "tmp"),
        XDG_CACHE_HOME=str(private / "cache"),
        MPLCONFIGDIR=str(private / "cache" / "matplotlib"),
    )
    return env


@functools.cache
def libc() -> ctypes.CDLL | None:
    """The C library, for its system calls (Linux); None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _prctl(option: int, arg2: int = 0, arg3: int = 0) -> int:
    """prctl(2); -1 with errno set on failure, or when there is no prctl (not Linux)."""
    c = libc()
    if c is None:
        return -1
    zero = ctypes.c_ulong(0)
    result: int = c.prctl(
        ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(arg3), zero, zero
    )
    return result


def protect_process() -> bool:
    """Make this process non-dumpable (Linux); True when it is.

    Other processes of the same user, such as the code `run_python` runs, can then no
    longer read this process's /proc files: environ (API keys), mem, fd, cwd, maps. It
    also turns off core dumps of this process and stops debuggers of the same user from
    attaching. A process with CAP_SYS_PTRACE, CAP_SYS_ADMIN or CAP_PERFMON (root,
    normally) still can; `child_main` drops those. Idempotent and cheap: call it before
    starting a child.
    """
    if not sys.platform.startswith("linux"):
        return False
    if _prctl(_PR_GET_DUMPABLE) == 0:
        return True
    if _prctl(_PR_SET_DUMPABLE, 0) != 0:
        _logger().warning(
            "could not make the process non-dumpable: %s", os.strerror(ctypes.get_errno())
        )
        return False
    _logger().debug("process %s is now non-dumpable", os.getpid())
    return True


def kill_group(pgid: int) -> None:
    """SIGKILL every process of a process group; quiet when it is already gone."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    except PermissionError:  # macOS answers EPERM for a group of zombies
        _logger().debug("could not signal process group %s", pgid)


def process_limit(extra: int) -> int:
    """An RLIMIT_NPROC that leaves the child `extra` more processes; 0 means do not limit.

    The kernel counts every process and thread of the user, not only the child's, so the
    limit is this user's current count plus `extra`. Without /proc (macOS) no limit is set.
    The kernel does not apply this limit to root.
    """
    if extra <= 0:
        return 0
    proc = Path("/proc")
    if not proc.is_dir():
        return 0
    uid = os.getuid()
    tasks = 0
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:  # the process ended meanwhile
            continue
        owner = threads = None
        for line in status.splitlines():
            if line.startswith("Uid:"):
                owner = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
        if owner == uid and threads:
            tasks += threads
    return tasks + extra if tasks else 0


class OutputCapture:
    """Keeps the head and the tail of a byte stream, at most `limit` bytes in all."""

    def __init__(self, limit: int) -> None:
        self._tail_limit = limit // 2
        self._head_limit = limit - self._tail_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    @property
    def dropped(self) -> int:
        """Bytes seen but not kept."""
        return self.total - len(self._head) - len(self._tail)

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            excess = len(self._tail) - self._tail_limit
            if excess > 0:
                del self._tail[:excess]

    def text(self) -> str:
        """The kept output as text; bytes that are not UTF-8 become U+FFFD."""
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        if self.dropped:
            return f"{head}\n…[{self.dropped} bytes of output omitted]…\n{tail}"
        return head + tail


# --- child side ----------------------------------------------------------------------------


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def drop_inspection_capabilities() -> None:
    """Give up, for good, the capabilities that see into other processes (Linux).

    Only a process that has them (root, normally) is affected: without this, root code
    could read the server's environment even though the server is non-dumpable. They are
    dropped from the bounding set (which needs CAP_SETPCAP), so exec cannot bring them
    back, and from the ambient, effective, permitted and inheritable sets. Every other
    power of root stays.
    """
    c = libc()
    if c is None:
        return
    for number in _INSPECTION_CAPS:  # EINVAL for one this kernel does not know; fine
        _prctl(_PR_CAPBSET_DROP, number)
        _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_LOWER, number)
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    if c.capget(ctypes.byref(header), data) != 0:
        return
    held = False
    for number in _INSPECTION_CAPS:
        word, bit = data[number // 32], 1 << (number % 32)
        held = held or bool((word.effective | word.permitted | word.inheritable) & bit)
        word.effective &= ~bit
        word.permitted &= ~bit
        word.inheritable &= ~bit
    if held:
        c.capset(ctypes.byref(header), data)


def _cap_limit(kind: int, soft: int, hard: int) -> None:
    import resource

    current = resource.getrlimit(kind)[1]
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    resource.setrlimit(kind, (soft, hard))


def child_main(argv: list[str]) -> None:
    """Run in the child: set limits, start the supervisor, run the script as __main__.

    `argv` is: memory bytes, CPU seconds, file size bytes, process limit (0: none), confine
    (1: to the working folder, with Landlock; see `_landlock`), script. Limits are set
    before anything of the code runs, so it cannot raise them again.
    """
    import resource

    memory, cpu, fsize, nproc, confine = (int(value) for value in argv[:5])
    script = argv[5]
    if confine:
        _confine_files()
    _cap_limit(resource.RLIMIT_AS, memory, memory)
    _cap_limit(resource.RLIMIT_CPU, cpu, cpu + 1)
    _cap_limit(resource.RLIMIT_FSIZE, fsize, fsize)
    _cap_limit(resource.RLIMIT_CORE, 0, 0)
    if nproc > 0:
        _cap_limit(resource.RLIMIT_NPROC, nproc, nproc)
    drop_inspection_capabilities()
    if _prctl(_PR_SET_CHILD_SUBREAPER, 1) == 0:
        _fork_supervisor()  # returns in the new process, which runs the code
    _default_signals()
    _run_script(script)


def _confine_files() -> None:
    """Confine the files the code may touch to the working folder (`_landlock`), or end
    the run saying why: the server asked for it because this kernel offers it."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_landlock.py")
    spec = importlib.util.spec_from_file_location("_gui_agent_landlock", path)
    assert spec is not None and spec.loader is not None
    landlock = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(landlock)
    why = landlock.confine_files(os.getcwd(), libc())
    if why is not None:
        sys.stderr.write(f"run_python: the code was not run: it could not be confined ({why})\n")
        sys.stderr.flush()
        os._exit(1)


def _default_signals() -> None:
    """Give the code the signal handling of a program started from a shell. A server
    started in the background of a script has SIGINT and SIGQUIT ignored (and under nohup
    SIGHUP), and an ignored signal stays ignored across exec: the code would not see them."""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # KeyboardInterrupt, as usual
    for name in _CODE_DEFAULTS:
        signal.signal(getattr(signal, name), signal.SIG_DFL)


def _run_script(script: str) -> None:
    """Run `script` as __main__; print a traceback without this module's own frames."""
    import runpy
    import traceback

    sys.argv = [script]
    sys.path.insert(0, os.getcwd())
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except BaseException as error:
        tb = error.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next
        traceback.print_exception(type(error), error, tb)
        sys.stderr.flush()
        os._exit(1)


def _fork_supervisor() -> None:
    """Fork; the parent supervises and never returns, the child returns to run the code.

    SIGCHLD and SIGTERM are blocked before the fork, so none is lost or handled by the
    default action in between; the child gets its signal mask back.
    """
    waited = {signal.SIGCHLD, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    try:
        pid = os.fork()
    except OSError:  # out of processes: run the code unsupervised
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        return
    if pid == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        return
    for name in _SUPERVISOR_IGNORES:  # the code may signal its whole process group
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    _exit_like(_supervise(pid))


def _supervise(main: int) -> int:
    """Wait for `main` (killing it on SIGTERM), then kill and reap every descendant.

    Descendants whose parent dies are re-parented to this process (a child subreaper), so
    killing its children until it has none leaves no process the code started. `main` is
    never reaped before it is killed, so its pid cannot have been reused then.
    """
    status: int | None = None
    while status is None:
        info = signal.sigwaitinfo({signal.SIGCHLD, signal.SIGTERM})
        if info.si_signo == signal.SIGTERM:
            with contextlib.suppress(OSError):  # a set-user-ID program may refuse; go on
                os.kill(main, signal.SIGKILL)
        status, _ = _reap(main)
    while True:
        for pid in _children():
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
        _, left = _reap(main)
        if not left:
            return status
        signal.sigtimedwait({signal.SIGCHLD}, _CLEANUP_POLL_S)


def _reap(main: int) -> tuple[int | None, bool]:
    """Reap every exited child. Returns (status of `main` if reaped, whether any is left)."""
    status = None
    while True:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status, False
        if pid == 0:
            return status, True
        if pid == main:
            status = wait_status


def _children() -> list[int]:
    """The pids of this process's children, from /proc."""
    me = os.getpid()
    try:
        listed = Path(f"/proc/{me}/task/{me}/children").read_text()
    except OSError:  # a kernel without CONFIG_PROC_CHILDREN: scan every process
        pass
    else:
        return [int(pid) for pid in listed.split()]
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(b")", 1)[1].split()[1]) == me:
            found.append(int(name))
    return found


def _exit_like(status: int) -> NoReturn:
    """Exit with the code's exit status, dying of the same signal when it died of one."""
    if os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    number = os.WTERMSIG(status)
    _prctl(_PR_SET_DUMPABLE, 0)  # no core dump of the supervisor itself
    if number not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
    os.kill(os.getpid(), number)
    os._exit(128 + number)
