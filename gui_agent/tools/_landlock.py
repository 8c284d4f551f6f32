"""Confining run_python's code to its session folder with Linux Landlock (kernel 5.13+).

`confine_files` runs in the child, before any of the code: from then on the process and all
it starts may read and run only the system's and Python's own files (READABLE_ROOTS and the
interpreter's prefixes) and read, write and delete only in the session folder (and use the
everyday devices, DEVICES, and /dev/shm). From Landlock 6 (Linux 6.12) it may not signal
processes outside its run nor reach abstract Unix sockets made outside it either. So
the code cannot read the server's data folder (its signing key, its users, other people's
chats), other sessions' folders, or the home folder's secrets (~/.ssh, a `.env`), even
though it runs as the server's user. Landlock needs no privilege; a kernel without it leaves
the code unconfined, as `landlock_abi` tells beforehand.

Like `_sandbox`, this file is loaded in the child by path and imports only the standard
library. Numbers are from <linux/landlock.h>; the system calls have the same numbers on
every Linux architecture.
"""

from __future__ import annotations

import ctypes
import os
import stat
import sys

__all__ = ["DEVICES", "READABLE_ROOTS", "confine_files", "landlock_abi", "readable_roots"]

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ALL_V1 = (1 << 13) - 1  # execute, write, read, read dir, remove, make (every kind)
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV
"""The rights a rule on a file (not a folder) may hold."""
_READ = _EXECUTE | _READ_FILE | _READ_DIR

READABLE_ROOTS = (
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/bin",
    "/sbin",
    "/etc",
    "/proc",
    "/sys",
    "/run/systemd/resolve",  # where /etc/resolv.conf leads on systemd machines
)
"""The system's folders the code may read (besides Python's own): programs, libraries,
locales, certificates, time zones, fonts. Not /home, /root, /tmp, /var, /srv, /opt or /mnt,
where data folders and other people's files live."""


DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/pts",
)
"""The devices the code may use (besides /dev/shm, shared by every run: multiprocessing's
semaphores live there)."""

_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def landlock_abi(libc: ctypes.CDLL | None) -> int:
    """The Landlock version this kernel offers; 0 when it offers none (or `libc` is None:
    not Linux). `libc`: the C library as `_sandbox.libc` opens it."""
    if libc is None:
        return 0
    version: int = libc.syscall(
        _CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)
    )
    return max(version, 0)


def _handled(abi: int) -> int:
    rights = _ALL_V1
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


def readable_roots(workdir: str) -> list[str]:
    """The folders the code may read: READABLE_ROOTS and the interpreter's prefixes, less any
    that holds `workdir` (allowing it would allow the session folder's neighbours: other
    sessions, the data folder)."""
    prefixes = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    folder = os.path.realpath(workdir)
    roots: list[str] = []
    for root in (*READABLE_ROOTS, *prefixes, os.path.dirname(os.path.realpath(sys.executable))):
        real = os.path.realpath(root)
        if real in roots or folder == real or folder.startswith(real.rstrip("/") + "/"):
            continue
        roots.append(real)
    return roots


def confine_files(workdir: str, libc: ctypes.CDLL | None) -> str | None:
    """Allow this process and its children only the files described in the module
    docstring. None when done; else why not (the code then runs unconfined)."""
    abi = landlock_abi(libc)
    if libc is None or abi < 1:
        return "this kernel has no Landlock"
    handled = _handled(abi)
    # (version 6 on: the code may not signal processes outside its run, the server's among
    # them, nor reach abstract Unix sockets made outside it)
    attr = _RulesetAttr(handled, 0, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 8
    ruleset: int = libc.syscall(
        _CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    if ruleset < 0:
        return f"no Landlock ruleset: {os.strerror(ctypes.get_errno())}"
    try:
        for root in readable_roots(workdir):
            _allow(libc, ruleset, root, _READ)
        for device in DEVICES:  # (not all of /dev: as root, that held the disks)
            _allow(libc, ruleset, device, (_READ | _WRITE_FILE | _TRUNCATE | _IOCTL_DEV) & handled)
        _allow(libc, ruleset, "/dev/shm", handled)  # (multiprocessing's semaphores)
        _allow(libc, ruleset, workdir, handled)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), *(ctypes.c_ulong(0),) * 3):
            return f"no_new_privs refused: {os.strerror(ctypes.get_errno())}"
        if libc.syscall(_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            return f"Landlock refused: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(ruleset)
    return None


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    """Allow `rights` on `path` and everything under it; nothing when it does not exist."""
    try:
        parent = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(parent).st_mode):
            rights &= _FILE_RIGHTS
        rule = _PathBeneath(rights, parent)
        libc.syscall(_ADD_RULE, ruleset, ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), 0)
    finally:
        os.close(parent)
