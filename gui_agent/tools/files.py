"""File tools confined to the session's folder: list, read and write.

Every path is resolved (following symlinks) before use and must land inside the session
folder; anything else raises `PathEscape`, which the executor reports to the model. Only
regular files are read or written: a named pipe, socket or device is refused after a
`stat`, and files are opened with O_NONBLOCK and O_NOFOLLOW and checked again with `fstat`,
so no open can block a worker thread, even when a file is swapped in between. A file with
more than one hard link is refused too: its other name may be outside the folder, and
writing it would change the file there. Listings do
not follow symlinks that lead outside the folder. All file I/O runs in a worker thread so
the event loop never blocks, and every name shown is valid UTF-8 (`display_path`).
"""

from __future__ import annotations

import asyncio
import io
import os
import stat
from pathlib import Path
from typing import Annotated, BinaryIO

from pydantic import Field

from gui_agent.exceptions import PathEscape
from gui_agent.tools.definition import ApprovalView, ToolContext, tool
from gui_agent.wording import counted

PRIVATE_DIR = ".gui_agent"
"""The hidden folder inside a session folder that GuiAgent keeps for itself."""

MAX_READ_CHARS = 100_000
MAX_LISTED = 500
_BINARY_PROBE = 8192

# Not every platform has every flag; 0 leaves a flag out.
_OPEN_FLAGS = (
    getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
)


def display_path(name: str) -> str:
    """`name` as valid UTF-8 text: bytes of a file name that are not UTF-8 (which Python
    keeps as lone surrogates) are shown as `\\xNN` escapes, visibly and JSON-safe."""
    try:
        raw = os.fsencode(name)
    except UnicodeEncodeError:  # a lone surrogate that did not come from a file name
        raw = name.encode("utf-8", errors="backslashreplace")
    return raw.decode("utf-8", errors="backslashreplace")


def resolve_in_workdir(workdir: Path, path: str) -> Path:
    """The absolute, symlink-free path of `path` inside `workdir`, or `PathEscape`.

    Relative paths are taken from `workdir`; absolute ones are accepted only when they
    point inside it. Symlinks are followed, so a link leading outside is refused too.
    """
    root = workdir.resolve()
    candidate = Path(path)
    target = candidate if candidate.is_absolute() else root / candidate
    try:
        resolved = target.resolve()
    except (OSError, RuntimeError, ValueError) as error:  # loops, NUL bytes
        raise PathEscape(f"{path!r} cannot be resolved ({error})") from error
    if not resolved.is_relative_to(root):
        raise PathEscape(f"{path!r}; use a relative path inside the session folder")
    return resolved


def _kind(mode: int) -> str:
    """What a file that is neither a regular file nor a folder is."""
    if stat.S_ISFIFO(mode):
        return "named pipe"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


def _not_regular(label: str, mode: int) -> OSError:
    return OSError(
        f"{label!r} is a {_kind(mode)}, not a regular file; only regular files can be read "
        "or written"
    )


def open_regular(path: Path, *, write: bool = False, label: str | None = None) -> BinaryIO:
    """Open a regular file without ever blocking, or raise `OSError` (`PathEscape` for a
    file with other hard links).

    O_NONBLOCK makes opening a named pipe return at once, O_NOFOLLOW refuses a symlink in
    the last place, and `fstat` on the open file refuses anything that is not a regular
    file. For `write` the file is created when missing and truncated only once it is known
    to be a regular file.
    """
    flags = _OPEN_FLAGS | (os.O_WRONLY | os.O_CREAT if write else os.O_RDONLY)
    fd = os.open(path, flags, 0o666)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(display_path(label or path.name), info.st_mode)
        if info.st_nlink > 1:
            raise PathEscape(
                f"{display_path(label or path.name)!r} has {info.st_nlink} hard links: the "
                "same file is also elsewhere, maybe outside the session folder, so it is "
                "neither read nor written here"
            )
        if write:
            os.ftruncate(fd, 0)
        return os.fdopen(fd, "wb" if write else "rb")
    except BaseException:
        os.close(fd)
        raise


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() or "."


def _size_or_kind(info: os.stat_result) -> str:
    if stat.S_ISREG(info.st_mode):
        return counted(info.st_size, "byte")
    return _kind(info.st_mode)


def _link_target(root: Path, link: Path) -> str:
    """Where a symlink leads, shown only when that is inside the folder; never followed
    outside it, so nothing is revealed about files there."""
    try:
        resolved = link.resolve()
    except (OSError, RuntimeError):  # a loop
        return "(broken link)"
    if not resolved.is_relative_to(root):
        return "(link outside the session folder)"
    try:
        info = resolved.stat()
    except OSError:
        return "(broken link)"
    shown = display_path(_relative(root, resolved))
    return f"{shown}/" if stat.S_ISDIR(info.st_mode) else shown


def _describe(root: Path, entry: os.DirEntry[str]) -> str:
    name = display_path(entry.name)
    try:
        if entry.is_symlink():
            return f"{name} -> {_link_target(root, Path(entry.path))}"
        info = entry.stat(follow_symlinks=False)
    except OSError:  # removed meanwhile
        return f"{name} (gone)"
    if stat.S_ISDIR(info.st_mode):
        return f"{name}/"
    return f"{name} ({_size_or_kind(info)})"


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _list(workdir: Path, path: str) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    root = workdir.resolve()
    target = resolve_in_workdir(workdir, path)
    try:
        info = target.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file or folder: {path!r}") from None
    label = display_path(_relative(root, target))
    if not stat.S_ISDIR(info.st_mode):
        return f"{label} ({_size_or_kind(info)})"
    with os.scandir(target) as scan:
        entries = sorted(
            (entry for entry in scan if not (target == root and entry.name == PRIVATE_DIR)),
            key=lambda entry: (not _is_folder(entry), entry.name),
        )
    if not entries:
        return f"{label}/ is empty"
    lines = [_describe(root, entry) for entry in entries[:MAX_LISTED]]
    if len(entries) > MAX_LISTED:
        lines.append(f"… and {len(entries) - MAX_LISTED} more")
    return "\n".join(lines)


NOT_UTF8_NOTE = (
    "\n[note: this file is not valid UTF-8 text; bytes that could not be read are shown as "
    "\ufffd. Writing this text back with write_file would replace them.]"
)


def _read(workdir: Path, path: str, max_chars: int) -> str:
    target = resolve_in_workdir(workdir, path)
    try:
        info = target.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {path!r}") from None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(f"{path!r} is a folder; use list_files")
    if not stat.S_ISREG(info.st_mode):
        raise _not_regular(path, info.st_mode)
    with open_regular(target, label=path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if b"\0" in handle.read(_BINARY_PROBE):
            shown = display_path(path)
            return (
                f"{shown} is a binary file ({counted(size, 'byte')}); it cannot be shown as text."
            )
        handle.seek(0)
        reader = io.TextIOWrapper(handle, encoding="utf-8", errors="strict")
        try:
            text, note = reader.read(max_chars + 1), ""
        except UnicodeDecodeError:
            reader.detach()  # a wrapper dropped without it would close the file
            handle.seek(0)
            reader = io.TextIOWrapper(handle, encoding="utf-8", errors="replace")
            text, note = reader.read(max_chars + 1), NOT_UTF8_NOTE
        reader.detach()
    if len(text) > max_chars:
        return (
            f"{text[:max_chars]}\n…[truncated: showing the first {max_chars} characters "
            f"of a {size}-byte file]{note}"
        )
    return text + note


def _write(workdir: Path, path: str, content: str) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    target = resolve_in_workdir(workdir, path)
    try:
        mode: int | None = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{path!r} is a folder")
    if mode is not None and not stat.S_ISREG(mode):
        raise _not_regular(path, mode)
    data = content.encode("utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open_regular(target, write=True, label=path) as handle:
        handle.write(data)
    relative = display_path(_relative(workdir.resolve(), target))
    return f"Wrote {counted(len(content), 'character')} to {relative}."


_LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".ts": "typescript",
    ".json": "json",
    ".md": "markdown",
    ".html": "html",
    ".css": "css",
    ".sh": "bash",
    ".yml": "yaml",
    ".yaml": "yaml",
    ".toml": "toml",
    ".sql": "sql",
}


def _write_view(arguments: dict[str, object]) -> ApprovalView:
    path = str(arguments.get("path", "?"))
    return ApprovalView(
        summary=f"Write file {path}",
        detail=str(arguments.get("content", "")),
        language=_LANGUAGES.get(Path(path).suffix.lower()),
    )


@tool
async def list_files(ctx: ToolContext, path: str = ".") -> str:
    """List the files and folders in a folder of the session folder.

    Args:
        path: The folder to list, relative to the session folder.
    """
    return await asyncio.to_thread(_list, ctx.workdir, path)


@tool(max_output_chars=MAX_READ_CHARS + 200)
async def read_file(
    ctx: ToolContext,
    path: str,
    max_chars: Annotated[int, Field(ge=1, le=MAX_READ_CHARS)] = 20_000,
) -> str:
    """Read a text file from the session folder.

    Args:
        path: The file to read, relative to the session folder.
        max_chars: Read at most this many characters.
    """
    return await asyncio.to_thread(_read, ctx.workdir, path, max_chars)


@tool(destructive=True, approval_view=_write_view)
async def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Create or overwrite a text file in the session folder; missing folders are created.

    Args:
        path: The file to write, relative to the session folder.
        content: The complete new content of the file.
    """
    return await asyncio.to_thread(_write, ctx.workdir, path, content)
