"""list_files, read_file, write_file: useful inside the session folder, refused outside it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gui_agent.tools import ToolContext, approval_view, default_tools, execute_tool, write_file
from gui_agent.tools.files import display_path, open_regular
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


posix_only = pytest.mark.skipif(os.name != "posix", reason="named pipes and sockets are POSIX")


@pytest.fixture
def fifo(workdir: Path) -> Path:
    workdir.mkdir()
    path = workdir / "pipe"
    os.mkfifo(path)
    return path


@contextlib.contextmanager
def unblocking(fifo: Path) -> Iterator[None]:
    """When the block times out, wake the threads a broken tool left blocked opening `fifo`
    and remove it, so the test fails instead of hanging the event loop's shutdown."""
    try:
        yield
    except TimeoutError:
        for flags in (os.O_WRONLY | os.O_NONBLOCK, os.O_RDONLY | os.O_NONBLOCK):
            with contextlib.suppress(OSError):  # opens only when someone waits on the other end
                os.close(os.open(fifo, flags))
        fifo.unlink(missing_ok=True)
        raise


@posix_only
async def test_pipes_and_sockets_are_refused_without_blocking(workdir: Path, fifo: Path) -> None:
    os.mknod(workdir / "sock", stat.S_IFSOCK | 0o600)
    with unblocking(fifo):
        async with asyncio.timeout(5):
            read = await run(workdir, "read_file", path="pipe")
            written = await run(workdir, "write_file", path="pipe", content="x")
            socket_read = await run(workdir, "read_file", path="sock")
            listing = await run(workdir, "list_files")
            single = await run(workdir, "list_files", path="pipe")
    assert read.is_error
    assert read.content == (
        "read_file raised OSError: 'pipe' is a named pipe, not a regular file; "
        "only regular files can be read or written"
    )
    assert written.is_error
    assert "'pipe' is a named pipe, not a regular file" in written.content
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert socket_read.is_error
    assert "'sock' is a socket, not a regular file" in socket_read.content
    assert listing.content == "pipe (named pipe)\nsock (socket)"
    assert single.content == "pipe (named pipe)"


@posix_only
async def test_many_reads_of_a_pipe_leave_the_other_tools_working(
    workdir: Path, fifo: Path
) -> None:
    (workdir / "notes.txt").write_text("still here")
    with unblocking(fifo):
        async with asyncio.timeout(5):
            reads = (run(workdir, "read_file", path="pipe") for _ in range(24))
            results = await asyncio.gather(*reads)
            listing = await run(workdir, "list_files")
            read = await run(workdir, "read_file", path="notes.txt")
    assert all(result.is_error and "named pipe" in result.content for result in results)
    assert listing.content == "notes.txt (10 bytes)\npipe (named pipe)"
    assert read.content == "still here"


@posix_only
async def test_opening_a_pipe_swapped_in_after_the_check_does_not_block(fifo: Path) -> None:
    # open_regular is what the tools open files with, after their own stat check; here it
    # meets the pipe itself, as it would when a file is replaced in between.
    async def attempt(write: bool) -> None:
        with unblocking(fifo):
            async with asyncio.timeout(5):
                handle = await asyncio.to_thread(open_regular, fifo, write=write)
        handle.close()

    with pytest.raises(OSError, match="is a named pipe"):
        await attempt(write=False)
    with pytest.raises(OSError):  # no reader: ENXIO at once instead of waiting for one
        await attempt(write=True)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:  # with a reader the open succeeds; the check on the open file refuses it
        with pytest.raises(OSError, match="is a named pipe"):
            await attempt(write=True)
        assert os.read(reader, 10) == b""  # nothing was written into it
    finally:
        os.close(reader)


@posix_only
async def test_links_are_listed_as_links_and_not_followed_outside(
    workdir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    workdir.mkdir()
    (workdir / "docs").mkdir()
    (workdir / "inside.txt").write_text("hello")
    (workdir / "to_outside_file").symlink_to(outside / "secret.txt")
    (workdir / "to_outside_dir").symlink_to(outside)
    (workdir / "to_missing_outside").symlink_to(tmp_path / "nothing")
    (workdir / "to_inside").symlink_to("inside.txt")
    (workdir / "to_docs").symlink_to(workdir / "docs")
    (workdir / "dangling").symlink_to("gone.txt")
    (workdir / "loop").symlink_to("loop")

    listing = await run(workdir, "list_files")
    assert listing.content.splitlines() == [
        "docs/",
        "dangling -> (broken link)",
        "inside.txt (5 bytes)",
        "loop -> (broken link)",
        "to_docs -> docs/",
        "to_inside -> inside.txt",
        "to_missing_outside -> (link outside the session folder)",
        "to_outside_dir -> (link outside the session folder)",
        "to_outside_file -> (link outside the session folder)",
    ]
    assert "10 bytes" not in listing.content  # the size of the secret is not revealed
    through_link = await run(workdir, "list_files", path="to_inside")
    assert through_link.content == "inside.txt (5 bytes)"


@pytest.mark.skipif(sys.platform != "linux", reason="Linux file names are bytes")
async def test_file_names_that_are_not_utf8_are_shown_escaped(workdir: Path) -> None:
    workdir.mkdir()
    os.close(os.open(os.fsencode(workdir) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY))
    listing = await run(workdir, "list_files")
    assert listing.content == "caf\\xe9.txt (0 bytes)"
    listing.model_dump_json()  # would raise on a lone surrogate
    assert display_path("caf\udce9.txt") == "caf\\xe9.txt"
    assert display_path("lone \ud800") == "lone \\ud800"
    assert display_path("café") == "café"


async def test_a_file_that_is_not_utf8_is_read_with_a_note_saying_so(workdir: Path) -> None:
    workdir.mkdir()
    (workdir / "latin1.txt").write_bytes("café crème\n".encode("latin-1"))
    (workdir / "utf8.txt").write_text("café crème\n", encoding="utf-8")
    odd = await run(workdir, "read_file", path="latin1.txt")
    assert not odd.is_error and odd.content.startswith("caf\ufffd cr\ufffdme")
    assert "not valid UTF-8" in odd.content and "write_file" in odd.content
    fine = await run(workdir, "read_file", path="utf8.txt")
    assert fine.content == "café crème\n"


async def test_a_count_of_one_is_said_in_the_singular(workdir: Path) -> None:
    written = await run(workdir, "write_file", path="x.txt", content="x")
    assert written.content == "Wrote 1 character to x.txt."
    assert "x.txt (1 byte)" in (await run(workdir, "list_files")).content
    (workdir / "nul.bin").write_bytes(b"\0")
    read = await run(workdir, "read_file", path="nul.bin")
    assert read.content == "nul.bin is a binary file (1 byte); it cannot be shown as text."
