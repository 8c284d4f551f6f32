"""list_files, read_file, write_file: useful inside the session folder, refused outside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gui_agent.tools import ToolContext, approval_view, default_tools, execute_tool, write_file
from schema import ToolCall, ToolResult


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path / "session"


async def run(workdir: Path, name: str, **arguments: object) -> ToolResult:
    ctx = ToolContext(session_id="s", run_id="r", call_id="c", workdir=workdir)
    call = ToolCall(id="c", name=name, arguments=json.dumps(arguments))
    return await execute_tool(default_tools(), call, ctx)


async def test_write_then_read_then_list(workdir: Path) -> None:
    written = await run(workdir, "write_file", path="notes/todo.md", content="- buy milk\n")
    assert not written.is_error
    assert written.content == "Wrote 11 characters to notes/todo.md."
    assert (workdir / "notes" / "todo.md").read_text() == "- buy milk\n"

    read = await run(workdir, "read_file", path="notes/todo.md")
    assert read.content == "- buy milk\n"

    (workdir / "data.csv").write_text("a,b\n")
    (workdir / ".gui_agent").mkdir()
    listing = await run(workdir, "list_files")
    assert listing.content == "notes/\ndata.csv (4 bytes)"
    inner = await run(workdir, "list_files", path="notes")
    assert inner.content == "todo.md (11 bytes)"


async def test_list_files_on_a_new_session_folder(workdir: Path) -> None:
    result = await run(workdir, "list_files")
    assert not result.is_error
    assert result.content == "./ is empty"


async def test_reading_is_capped_and_binary_files_are_not_dumped(workdir: Path) -> None:
    workdir.mkdir()
    (workdir / "big.txt").write_text("y" * 5000)
    (workdir / "blob.bin").write_bytes(b"\x89PNG\0\0\0data")
    capped = await run(workdir, "read_file", path="big.txt", max_chars=100)
    assert capped.content.startswith("y" * 100 + "\n…[truncated: showing the first 100")
    binary = await run(workdir, "read_file", path="blob.bin")
    assert "binary file (11 bytes)" in binary.content
    missing = await run(workdir, "read_file", path="nope.txt")
    assert missing.is_error
    assert missing.content == "read_file raised FileNotFoundError: no such file: 'nope.txt'"


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "notes/../../x", "link/secret"])
async def test_paths_outside_the_session_folder_are_refused(
    workdir: Path, tmp_path: Path, path: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("top secret")
    workdir.mkdir()
    (workdir / "link").symlink_to(outside)

    for tool_name, extra in (("read_file", {}), ("write_file", {"content": "x"})):
        result = await run(workdir, tool_name, path=path, **extra)
        assert result.is_error
        assert result.content.startswith("path escapes the session folder: ")
        assert "top secret" not in result.content
    listed = await run(workdir, "list_files", path=path)
    assert listed.content.startswith("path escapes the session folder: ")
    assert (outside / "secret").read_text() == "top secret"
    assert not (tmp_path / "outside.txt").exists()


async def test_absolute_paths_inside_the_session_folder_are_fine(workdir: Path) -> None:
    target = workdir.resolve() / "inside.txt"
    result = await run(workdir, "write_file", path=str(target), content="ok")
    assert not result.is_error
    assert target.read_text() == "ok"


def test_write_file_approval_shows_path_and_content() -> None:
    call = ToolCall(id="1", name="write_file", arguments='{"path": "a.py", "content": "x = 1"}')
    view = approval_view(write_file, call)
    assert view.summary == "Write file a.py"
    assert view.detail == "x = 1"
    assert view.language == "python"
