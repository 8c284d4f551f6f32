"""File tools refuse a file that has other hard links: its other name may be outside the
session folder, and writing through it would change the file there."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gui_agent.tools import ToolContext, default_tools, execute_tool
from schema import ToolCall


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    workdir, outside = tmp_path / "session", tmp_path / "outside"
    workdir.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET")
    os.link(outside / "secret.txt", workdir / "notes.txt")
    return workdir, outside


async def run(workdir: Path, name: str, **arguments: str) -> tuple[str, bool]:
    ctx = ToolContext(session_id="s", run_id="r", call_id="c", workdir=workdir)
    call = ToolCall(id="c", name=name, arguments=json.dumps(arguments))
    result = await execute_tool(default_tools(), call, ctx)
    return result.content, result.is_error


async def test_writing_through_a_hard_link_is_refused(folders: tuple[Path, Path]) -> None:
    workdir, outside = folders

    content, is_error = await run(workdir, "write_file", path="notes.txt", content="PWNED")

    assert is_error and "hard links" in content
    assert (outside / "secret.txt").read_text() == "SECRET"


async def test_reading_through_a_hard_link_is_refused(folders: tuple[Path, Path]) -> None:
    workdir, _ = folders

    content, is_error = await run(workdir, "read_file", path="notes.txt")

    assert is_error and "hard links" in content and "SECRET" not in content


async def test_files_with_one_link_are_read_and_written(folders: tuple[Path, Path]) -> None:
    workdir, _ = folders

    assert await run(workdir, "write_file", path="own.txt", content="mine") == (
        "Wrote 4 characters to own.txt.",
        False,
    )
    assert await run(workdir, "read_file", path="own.txt") == ("mine", False)
