"""run_python's code reads and writes only in its session folder (Linux Landlock): in team
mode it ran as the server's user and could read the data folder's signing key and users
file, sign a token for anyone and read their chats, or another session's folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gui_agent.tools._landlock import landlock_abi, readable_roots
from gui_agent.tools._sandbox import libc
from gui_agent.tools.python_runner import (
    UNCONFINED_ENV,
    PythonLimits,
    files_confined,
    python_tool,
    run_code,
)

pytestmark = pytest.mark.skipif(
    landlock_abi(libc()) < 1, reason="this kernel has no Landlock (Linux 5.13 or later)"
)

PROBE = """
import os, pathlib, json
for path in {paths!r}:
    try:
        open(path).read()
        print("read", path)
    except PermissionError:
        print("refused", path)
for path in {writes!r}:
    try:
        pathlib.Path(path).write_text("x")
        print("wrote", path)
    except PermissionError:
        print("refused", path)
pathlib.Path("mine.txt").write_text("kept")
os.makedirs("sub/dir", exist_ok=True)
os.rename("mine.txt", "sub/dir/moved.txt")
print(pathlib.Path("sub/dir/moved.txt").read_text(), json.dumps([1]))
"""


def data_folder(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A server's data folder: its signing key, another person's chat folder, and bob's."""
    data = tmp_path / "data"
    key = data / "jwt.key"
    theirs = data / "workspaces" / "alice" / "s0" / "plans.txt"
    mine = data / "workspaces" / "bob" / "s1"
    theirs.parent.mkdir(parents=True)
    mine.mkdir(parents=True)
    key.write_text("signing key")
    theirs.write_text("alice's plans")
    return key, theirs, mine


async def test_the_code_reads_and_writes_only_in_its_session_folder(tmp_path: Path) -> None:
    key, theirs, mine = data_folder(tmp_path)
    home_secret = Path.home() / ".gui-agent-test-secret"
    paths = [str(key), "../../alice/s0/plans.txt", str(theirs), str(home_secret), __file__]
    writes = [str(key.parent / "planted.txt"), str(theirs.parent / "planted.txt")]
    code = PROBE.format(paths=paths, writes=writes)
    home_secret.write_text("secret")
    try:
        result = await run_code(code, mine, PythonLimits())
    finally:
        home_secret.unlink()
    lines = result.content.splitlines()
    assert [line for line in lines if line.startswith(("read", "wrote"))] == []
    assert lines.count("refused " + str(key)) == 1
    assert sum(line.startswith("refused") for line in lines) == len(paths) + len(writes)
    assert "kept [1]" in lines  # its own folder: write, make folders, rename, read
    assert not result.is_error
    assert not (key.parent / "planted.txt").exists()
    assert (mine / "sub" / "dir" / "moved.txt").read_text() == "kept"


async def test_the_processes_the_code_starts_are_confined_too(tmp_path: Path) -> None:
    key, _, mine = data_folder(tmp_path)
    code = (
        "import subprocess, sys\n"
        f"done = subprocess.run([sys.executable, '-c', {f'open({str(key)!r}).read()'!r}],\n"
        "                      capture_output=True, text=True)\n"
        "print(done.returncode, 'PermissionError' in done.stderr)\n"
        f"print(subprocess.run(['cat', {str(key)!r}], capture_output=True).returncode)\n"
    )
    result = await run_code(code, mine, PythonLimits())
    assert result.content.splitlines()[:2] == ["1 True", "1"], result.content


async def test_an_operator_may_leave_the_code_unconfined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, _, mine = data_folder(tmp_path)
    code = f"print(open({str(key)!r}).read())"
    result = await run_code(code, mine, PythonLimits(confine_files=False))
    assert result.content.startswith("signing key"), result.content
    monkeypatch.setenv(UNCONFINED_ENV, "1")
    result = await run_code(code, mine, PythonLimits())
    assert result.content.startswith("signing key"), result.content
    assert "can read and change" in python_tool().schema.description


def test_the_model_is_told_where_its_code_may_read_and_write() -> None:
    assert files_confined()
    confined = python_tool().schema.description
    assert "read and write only inside the session folder" in confined
    loose = python_tool(PythonLimits(confine_files=False)).schema.description
    assert "can read and change that user's files outside the session folder" in loose


def test_a_system_folder_that_holds_the_session_folder_is_not_readable(tmp_path: Path) -> None:
    roots = readable_roots("/etc/gui-agent/workspaces/bob/s1")
    assert "/etc" not in roots and "/usr" in roots
    assert sys.prefix in roots or Path(sys.prefix).resolve().as_posix() in roots
    assert not any(str(tmp_path).startswith(root.rstrip("/") + "/") for root in roots)
