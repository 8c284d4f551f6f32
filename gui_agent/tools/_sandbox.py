"""Pieces of the child-process sandbox: environment, output capture, process-group kill."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

logger = logging.getLogger(__name__)

_PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "TZ")


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
        TMPDIR=str(private / "tmp"),
        XDG_CACHE_HOME=str(private / "cache"),
        MPLCONFIGDIR=str(private / "cache" / "matplotlib"),
    )
    return env


def kill_group(pgid: int) -> None:
    """SIGKILL every process of a process group; quiet when it is already gone."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    except PermissionError:  # macOS answers EPERM for a group of zombies
        logger.debug("could not signal process group %s", pgid)


def process_limit(extra: int) -> int:
    """An RLIMIT_NPROC that leaves the child `extra` more processes; 0 means do not limit.

    The kernel counts every process and thread of the user, not only the child's, so the
    limit is this user's current count plus `extra`. Without /proc (macOS) no limit is set.
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
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        if self.dropped:
            return f"{head}\n…[{self.dropped} bytes of output omitted]…\n{tail}"
        return head + tail
