"""`gui-agent chat` and `gui-agent models` fed through pipes: odd bytes, narrow encodings,
commands that start turns, and where the configured models came from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.gui_agent.test_repl_errors import DRIVER, WRITE_A_FILE, chat_argv, env, workspace

CLI = str(Path(sys.executable).parent / "gui-agent")
READ_A_FILE = {"tool": "read_file", "args": {"path": "notes.txt"}}


def run(
    tmp_path: Path, argv: list[str], typed: bytes, extra_env: dict[str, str]
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        argv,
        input=typed,
        capture_output=True,
        env={**env(tmp_path), **extra_env},
        cwd=tmp_path,
        timeout=30,
        check=False,
    )


def test_bytes_that_are_not_utf8_are_replaced_and_every_line_is_answered(tmp_path: Path) -> None:
    typed = b"first line\n\xff\xfe caf\xe9\nthird line\n"
    argv = chat_argv(["one", "two", "three"], workspace(tmp_path))
    result = run(tmp_path, argv, typed, {"PYTHONIOENCODING": "utf-8"})  # strict decoding
    assert result.returncode == 0, result.stderr.decode()
    assert b"Traceback" not in result.stderr
    out = result.stdout.decode()
    assert "[Executor] one" in out and "[Executor] three" in out
    assert "] two" in out  # the undecodable line was sent as a message too


def test_a_terminal_that_cannot_show_unicode_gets_question_marks_not_a_crash(
    tmp_path: Path,
) -> None:
    folder = workspace(tmp_path)
    (folder / "notes.txt").write_text("café → ok\n")
    argv = chat_argv([READ_A_FILE, "read it"], folder)
    result = run(tmp_path, argv, b"read my notes\n", {"PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0, result.stderr.decode()
    assert b"Traceback" not in result.stderr
    out = result.stdout.decode("ascii")
    assert "? read_file(" in out  # the arrow the terminal cannot show
    assert "caf? ? ok" in out
    assert "[Executor] read it" in out


def test_auto_on_after_a_reply_shows_the_automatic_turns(tmp_path: Path) -> None:
    replies = ["first reply", "automatic one", "automatic two"]
    argv = chat_argv(replies, workspace(tmp_path))
    result = run(tmp_path, argv, b"hello\n/auto on\n/quit\n", {})
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert "AutoChat on" in out
    assert "AutoChat turn 1/" in out
    assert out.index("AutoChat on") < out.index("automatic one") < out.index("automatic two")
    assert "AutoChat stopped" in out  # followed to its end before the next prompt


def test_models_says_when_the_models_came_from_the_config_file_or_the_variable(
    tmp_path: Path,
) -> None:
    config = tmp_path / "gui-agent.toml"
    config.write_text('models = ["scripted:echo"]\n')
    from_file = run(tmp_path, [CLI, "--config", str(config), "models", "--no-probe"], b"", {})
    from_variable = run(
        tmp_path, [CLI, "models", "--no-probe"], b"", {"GUI_AGENT_MODEL": "scripted:echo"}
    )
    for result in (from_file, from_variable):
        assert result.returncode == 0, result.stderr.decode()
        assert b"--model flag" not in result.stdout
    assert f"default: config file {config}".encode() in from_file.stdout
    assert b"default: GUI_AGENT_MODEL in environment" in from_variable.stdout
    # the list is said once, on stdout (a log line per model said it again on stderr)
    assert b"scripted:echo" not in from_file.stderr + from_variable.stderr


def test_a_config_file_that_is_not_text_is_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "gui-agent.toml"
    config.write_bytes(b"\xff\xfeport = 1\n")
    result = run(tmp_path, [CLI, "--config", str(config), "models", "--no-probe"], b"", {})
    assert result.returncode == 2
    assert result.stderr.decode() == (
        f"gui-agent: config file {config} is not valid TOML: not UTF-8 text (byte 0)\n"
    )


def test_auto_shows_its_limits_and_sets_them_one_by_one(tmp_path: Path) -> None:
    typed = b"/auto\n/auto turns 2\n/auto time 600\n/auto turns 0\n/auto tokens lots\n"
    typed += b"hello\n/auto on\n/auto\n/quit\n"
    argv = chat_argv(
        ["first reply", "automatic one", "automatic two", "never"], workspace(tmp_path)
    )
    result = run(tmp_path, argv, typed, {})
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    shown = "at most {} turns, no token budget, {}, 0 s between turns"
    assert f"AutoChat off: {shown.format(5, 'no time budget')}" in out
    assert f"AutoChat off: {shown.format(2, 'no time budget')}" in out
    assert f"AutoChat off: {shown.format(2, '600 s in all')}" in out
    assert "! /auto turns: Input should be greater than or equal to 1" in out
    assert "! /auto tokens: expected a number, got 'lots'" in out
    assert (
        "AutoChat turn 2/2" in out
        and "AutoChat stopped after 2 automatic turns: it reached its limit of automatic turns"
        in out
    )
    assert "never" not in out  # the third automatic turn was not taken
    # the switch stays on after the run stopped at its limit, and /auto says nothing runs
    not_running = "not running: your next message starts it, /auto on starts it now"
    assert f"AutoChat on ({not_running}): {shown.format(2, '600 s in all')}" in out


def test_a_block_in_triple_quotes_is_one_message_and_an_unfinished_one_is_not_sent(
    tmp_path: Path,
) -> None:
    typed = b'"""\nfix this:\n/usr/bin/python: bad\n\n  indented\n"""\n"""never finished\n'
    argv = [CLI, "chat", "--model", "scripted:echo", "--no-probe", "--workdir", str(tmp_path)]
    result = run(tmp_path, argv, typed, {})
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert "You said:\n\nfix this:\n/usr/bin/python: bad\n\n  indented\n  (completed)" in out
    assert out.count("(completed)") == 1  # one message, one turn
    assert "unknown command" not in out  # a line of the block starting with / is text
    assert "(end of input: the message was not sent)" in out
    assert "never finished" not in out


def test_a_chat_says_where_its_files_stay_and_leaves_no_empty_folder(tmp_path: Path) -> None:
    """The chat is not kept, but each one left a folder under the data folder, unsaid."""
    folders = tmp_path / "data" / "workspaces" / "local"
    listing = {"tool": "list_files", "args": {}}
    argv = [sys.executable, "-c", DRIVER, json.dumps([listing, "nothing to keep"])]
    quiet = run(tmp_path, argv, b"hello\n", {})
    assert quiet.returncode == 0, quiet.stderr.decode()
    assert "stay in" not in quiet.stdout.decode()
    assert not folders.exists() or not any(folders.iterdir())

    argv = [sys.executable, "-c", DRIVER, json.dumps([WRITE_A_FILE, "written"])]
    kept = run(tmp_path, argv, b"write it\ny\n", {})
    assert kept.returncode == 0, kept.stderr.decode()
    (folder,) = folders.iterdir()
    assert (folder / "a.txt").read_text() == "hi"
    assert f"(the files of this chat stay in {folder})" in kept.stdout.decode()


def test_an_output_with_no_room_left_is_said_in_one_line_not_a_traceback(tmp_path: Path) -> None:
    """`gui-agent chat > /dev/full` (a full disk) ended in a raw OSError traceback."""
    argv = [sys.executable, "-c", DRIVER, json.dumps(["a reply"])]
    for command in ([CLI, "models", "--no-probe"], argv):
        with open("/dev/full", "w") as full:
            ended = subprocess.run(
                command,
                input=b"hello\n",
                stdout=full,
                stderr=subprocess.PIPE,
                env={**env(tmp_path), "GUI_AGENT_MODEL": "scripted:echo"},
                cwd=tmp_path,
                timeout=60,
                check=False,
            )
        said = ended.stderr.decode()
        assert ended.returncode == 1, said
        assert "cannot write the output: No space left on device" in said
        assert "Traceback" not in said
