"""File tools confined to the session's folder: list, read and write.

Every path is resolved (following symlinks) before use and must land inside the session
folder; anything else raises `PathEscape`, which the executor reports to the model. All
file I/O runs in a worker thread so the event loop never blocks.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

from pydantic import Field

from gui_agent.exceptions import PathEscape
from gui_agent.tools.definition import ApprovalView, ToolContext, tool

PRIVATE_DIR = ".gui_agent"
"""The hidden folder inside a session folder that GuiAgent keeps for itself."""

MAX_READ_CHARS = 100_000
MAX_LISTED = 500
_BINARY_PROBE = 8192


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


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() or "."


def _list(workdir: Path, path: str) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    root = workdir.resolve()
    target = resolve_in_workdir(workdir, path)
    if not target.exists():
        raise FileNotFoundError(f"no such file or folder: {path!r}")
    if target.is_file():
        return f"{_relative(root, target)} ({target.stat().st_size} bytes)"
    entries = sorted(
        (entry for entry in target.iterdir() if not (target == root and entry.name == PRIVATE_DIR)),
        key=lambda entry: (not entry.is_dir(), entry.name),
    )
    if not entries:
        return f"{_relative(root, target)}/ is empty"
    lines = []
    for entry in entries[:MAX_LISTED]:
        if entry.is_dir():
            lines.append(f"{entry.name}/")
        else:
            try:
                size = entry.stat().st_size
            except OSError:  # a dangling symlink
                lines.append(f"{entry.name} (broken link)")
                continue
            lines.append(f"{entry.name} ({size} bytes)")
    if len(entries) > MAX_LISTED:
        lines.append(f"… and {len(entries) - MAX_LISTED} more")
    return "\n".join(lines)


def _read(workdir: Path, path: str, max_chars: int) -> str:
    target = resolve_in_workdir(workdir, path)
    if target.is_dir():
        raise IsADirectoryError(f"{path!r} is a folder; use list_files")
    if not target.exists():
        raise FileNotFoundError(f"no such file: {path!r}")
    size = target.stat().st_size
    with target.open("rb") as handle:
        if b"\0" in handle.read(_BINARY_PROBE):
            return f"{path} is a binary file ({size} bytes); it cannot be shown as text."
    with target.open(encoding="utf-8", errors="replace") as handle:
        text = handle.read(max_chars + 1)
    if len(text) > max_chars:
        return (
            f"{text[:max_chars]}\n…[truncated: showing the first {max_chars} characters "
            f"of a {size}-byte file]"
        )
    return text


def _write(workdir: Path, path: str, content: str) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    target = resolve_in_workdir(workdir, path)
    if target.is_dir():
        raise IsADirectoryError(f"{path!r} is a folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    relative = _relative(workdir.resolve(), target)
    return f"Wrote {len(content)} characters to {relative}."


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
