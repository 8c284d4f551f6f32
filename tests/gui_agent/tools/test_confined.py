"""run_python's code reads and writes only in its session folder (Linux Landlock): in team
mode it ran as the server's user and could read the data folder's signing key and users
file, sign a token for anyone and read their chats, or another session's folder."""

from __future__ import annotations

import base64
import os
import socket
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
    for said in ("1", "true", " Yes "):
        monkeypatch.setenv(UNCONFINED_ENV, said)
        result = await run_code(code, mine, PythonLimits())
        assert result.content.startswith("signing key"), (said, result.content)
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


async def test_a_link_put_in_place_of_the_private_folder_leads_nowhere(tmp_path: Path) -> None:
    """Alice's code swapped her chat's `.gui_agent` for a link to Bob's: her next run wrote
    its script in Bob's folder and ran there, reading and writing Bob's files."""
    bob = tmp_path / "workspaces" / "bob" / "s1"
    alice = tmp_path / "workspaces" / "alice" / "s2"
    alice.mkdir(parents=True)
    (bob / ".gui_agent").mkdir(parents=True)
    (bob / "secret.txt").write_text("bob's plans")
    link = f"os.symlink({str(bob / '.gui_agent')!r}, '.gui_agent')\n"
    swap = "import os, shutil\nshutil.rmtree('.gui_agent')\n" + link
    await run_code("print('first run')", alice, PythonLimits())  # (makes her .gui_agent)
    swapped = await run_code(swap, alice, PythonLimits())
    assert not swapped.is_error, swapped.content
    assert (alice / ".gui_agent").is_symlink()
    after = await run_code(
        "import os\nprint(os.getcwd(), sorted(os.listdir('.')))\nopen('mine.txt', 'w').write('x')",
        alice,
        PythonLimits(),
    )
    assert after.content.startswith(f"{alice} ['.gui_agent']"), after.content
    assert not (alice / ".gui_agent").is_symlink()  # a folder of her own again
    assert sorted(p.name for p in bob.iterdir()) == [".gui_agent", "secret.txt"]
    assert list((bob / ".gui_agent").iterdir()) == []  # no script, tmp or cache of hers
    assert (alice / "mine.txt").exists()


async def test_a_picture_with_a_second_hard_link_is_left_out_and_the_run_still_answers(
    tmp_path: Path,
) -> None:
    dot = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(50))).decode()
    code = (
        f"import base64, os\npng = base64.b64decode({dot!r})\n"
        "open('dot.png', 'wb').write(png)\nos.link('dot.png', 'again.png')\nprint('written')\n"
    )
    result = await run_code(code, tmp_path, PythonLimits())
    assert not result.is_error and result.content.startswith("written"), result.content
    assert result.images == ()


async def test_the_code_cannot_signal_the_server_nor_reach_its_abstract_sockets(
    tmp_path: Path,
) -> None:
    if landlock_abi(libc()) < 6:
        pytest.skip("signal and abstract socket scopes need Landlock 6 (Linux 6.12)")
    name = f"\0gui-agent-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(name)
        listening.listen(1)
        code = (
            "import os, socket\n"
            f"try:\n    os.kill({os.getpid()}, 0)\n    print('signalled')\n"
            "except PermissionError:\n    print('no signal')\n"
            f"try:\n    socket.socket(socket.AF_UNIX).connect({name!r})\n    print('connected')\n"
            "except PermissionError:\n    print('no socket')\n"
            "print(open('/dev/null', 'w').write('x'), len(open('/dev/urandom', 'rb').read(4)))\n"
        )
        result = await run_code(code, tmp_path, PythonLimits())
    assert result.content.splitlines()[:3] == ["no signal", "no socket", "1 4"], result.content
