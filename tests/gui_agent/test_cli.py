"""The `gui-agent` command as a person uses it: help, models, and the terminal chat."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

CLI = str(Path(sys.executable).parent / "gui-agent")


def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    clean["GUI_AGENT_DATA_DIR"] = str(tmp_path / "data")
    clean["HOME"] = str(tmp_path)
    return clean


def test_help_lists_every_command(tmp_path: Path) -> None:
    out = subprocess.run(
        [CLI, "--help"], capture_output=True, text=True, env=env(tmp_path), check=True
    ).stdout
    for command in ("serve", "chat", "models", "users"):
        assert command in out


def test_models_says_which_is_default_and_why(tmp_path: Path) -> None:
    result = subprocess.run(
        [CLI, "models", "--model", "scripted:echo", "--no-probe"],
        capture_output=True,
        text=True,
        env=env(tmp_path),
        check=True,
        cwd=tmp_path,
    )
    assert "scripted:echo" in result.stdout
    assert "default: scripted:echo" in result.stdout
    assert "--model" in result.stdout  # where it came from


def test_unknown_model_is_a_clear_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [CLI, "models", "--model", "nonsense", "--no-probe"],
        capture_output=True,
        text=True,
        env=env(tmp_path),
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 2
    assert "openai:" in result.stderr  # lists the accepted forms
    assert "Traceback" not in result.stderr


def test_terminal_chat_streams_a_reply(tmp_path: Path) -> None:
    result = subprocess.run(
        [CLI, "chat", "--model", "scripted:echo", "--no-probe", "--workdir", str(tmp_path)],
        input="hello from the terminal\n/quit\n",
        capture_output=True,
        text=True,
        env=env(tmp_path),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "hello from the terminal" in result.stdout
    assert "[Executor] " in result.stdout
    assert "(completed)" in result.stdout


async def test_ctrl_c_stops_the_turn_not_the_program(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        CLI,
        "chat",
        "--model",
        "scripted:echo",
        "--no-probe",
        "--workdir",
        str(tmp_path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env(tmp_path),
        cwd=tmp_path,
    )
    assert process.stdin and process.stdout
    long_message = " ".join(f"w{i}" for i in range(3000))  # echoed at ~100 words/s
    process.stdin.write((long_message + "\n").encode())
    await process.stdin.drain()
    seen = b""
    async with asyncio.timeout(30):
        while b"w20 " not in seen:
            seen += await process.stdout.read(4096)
    process.send_signal(signal.SIGINT)
    async with asyncio.timeout(30):
        while b"(interrupted" not in seen:
            chunk = await process.stdout.read(4096)
            assert chunk, seen[-2000:]
            seen += chunk
    assert process.returncode is None  # still running after Ctrl-C
    process.stdin.write(b"/quit\n")
    await process.stdin.drain()
    async with asyncio.timeout(30):
        rest, _ = await process.communicate()
    assert process.returncode == 0
    assert b"w2999" not in seen + rest  # the turn really stopped


def test_serve_is_the_default_command() -> None:
    from gui_agent.cli import with_default_command

    assert with_default_command([]) == ["serve"]
    assert with_default_command(["--host", "0.0.0.0"]) == ["serve", "--host", "0.0.0.0"]
    assert with_default_command(["--config", "c.toml", "--port", "1"]) == [
        "--config",
        "c.toml",
        "serve",
        "--port",
        "1",
    ]
    assert with_default_command(["--log-level=DEBUG", "chat"]) == ["--log-level=DEBUG", "chat"]
    assert with_default_command(["--help"]) == ["--help"]


def test_non_loopback_bind_without_login_refuses_with_how_to(tmp_path: Path) -> None:
    result = subprocess.run(
        [CLI, "--host", "0.0.0.0", "--model", "scripted:echo", "--no-probe"],
        capture_output=True,
        text=True,
        env=env(tmp_path),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "gui-agent users add" in result.stderr and "--auth-file" in result.stderr


def run_cli(
    tmp_path: Path, *args: str, extra_env: dict[str, str] | None = None, typed: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args],
        input=typed,
        capture_output=True,
        text=True,
        env={**env(tmp_path), **(extra_env or {})},
        cwd=tmp_path,
        timeout=60,
        check=False,
    )


def test_bad_log_level_is_a_clear_error_from_the_flag_or_the_environment(tmp_path: Path) -> None:
    from_flag = run_cli(tmp_path, "--log-level", "BOGUS", "models", "--no-probe")
    from_env = run_cli(tmp_path, "models", "--no-probe", extra_env={"GUI_AGENT_LOG_LEVEL": "BOGUS"})
    for result in (from_flag, from_env):
        assert result.returncode == 2
        assert "Traceback" not in result.stderr
        assert "DEBUG, INFO, WARNING" in result.stderr and "'BOGUS'" in result.stderr
    assert "--log-level" in from_flag.stderr
    assert "GUI_AGENT_LOG_LEVEL" in from_env.stderr


def test_chat_help_says_the_log_level_chat_uses(tmp_path: Path) -> None:
    """It said "as above", and above (the top-level help, not shown) said INFO."""
    result = run_cli(tmp_path, "chat", "--help")
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stdout.split())
    assert "as above" not in said
    levels = "DEBUG, INFO, WARNING, ERROR or CRITICAL"
    assert f"--log-level LOG_LEVEL {levels} (default INFO; for chat WARNING" in said


def test_log_level_flag_takes_any_case(tmp_path: Path) -> None:
    result = run_cli(
        tmp_path, "--log-level", "debug", "models", "--model", "scripted:echo", "--no-probe"
    )
    assert result.returncode == 0, result.stderr
    assert " DEBUG " in result.stderr


def test_users_file_that_cannot_be_written_is_one_clear_error(tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    result = run_cli(
        tmp_path,
        "users",
        "add",
        "bob",
        "--data-dir",
        str(a_file / "sub"),
        "--password-stdin",
        typed="long enough password\n",
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert (
        result.stderr
        == f"gui-agent: cannot use the users file {a_file}/sub/users.json: Not a directory\n"
    )


def test_a_cli_error_shows_control_characters_it_quotes_as_harmless_symbols(
    tmp_path: Path,
) -> None:
    a_file = tmp_path / "data\x1b[2J"  # an escape sequence that would clear the terminal
    a_file.write_text("")
    result = run_cli(tmp_path, "users", "remove", "bob", "--data-dir", str(a_file / "sub"))
    assert result.returncode == 2
    assert "\x1b" not in result.stderr
    assert f"{tmp_path}/data\u241b[2J/sub/users.json" in result.stderr


def test_removing_a_user_that_does_not_exist_says_so(tmp_path: Path) -> None:
    data = tmp_path / "users"
    result = run_cli(tmp_path, "users", "remove", "nobody", "--data-dir", str(data))
    assert result.returncode == 2
    assert "removed" not in result.stdout
    assert result.stderr == f"gui-agent: there is no user 'nobody' in {data}/users.json\n"


def test_users_list_prints_the_names_one_per_line_and_never_a_hash(tmp_path: Path) -> None:
    users = tmp_path / "users.json"
    missing = run_cli(tmp_path, "users", "list", "--auth-file", str(users))
    assert missing.returncode == 2 and missing.stdout == ""
    assert f"there is no users file at {users}" in missing.stderr
    for name in ("carol", "alice", "bob"):
        add = ("users", "add", name, "--auth-file", str(users), "--password-stdin")
        assert run_cli(tmp_path, *add, typed="long enough password\n").returncode == 0
    listed = run_cli(tmp_path, "users", "list", "--auth-file", str(users))
    assert listed.returncode == 0
    assert listed.stdout == "alice\nbob\ncarol\n"  # sorted; nothing else on stdout
    assert f"3 users in {users}" in listed.stderr
    assert "scrypt" not in listed.stdout + listed.stderr
    for name in ("alice", "bob"):
        assert run_cli(tmp_path, "users", "remove", name, "--auth-file", str(users)).returncode == 0
    one = run_cli(tmp_path, "users", "list", "--auth-file", str(users))
    assert (one.stdout, f"1 user in {users}" in one.stderr) == ("carol\n", True)
    assert run_cli(tmp_path, "users", "remove", "carol", "--auth-file", str(users)).returncode == 0
    none = run_cli(tmp_path, "users", "list", "--auth-file", str(users))
    assert (none.returncode, none.stdout) == (0, "")
    assert f"0 users in {users}" in none.stderr


def test_a_cli_error_is_printed_once(tmp_path: Path) -> None:
    data = str(tmp_path / "users")
    add = ("users", "add", "bob", "--data-dir", data, "--password-stdin")
    assert run_cli(tmp_path, *add, typed="long enough password\n").returncode == 0
    again = run_cli(tmp_path, *add, typed="long enough password\n")
    assert again.returncode == 2
    assert again.stderr.count("already exists") == 1, again.stderr
    removed = run_cli(tmp_path, "users", "remove", "bob", "--data-dir", data)
    assert removed.returncode == 0 and "removed bob" in removed.stdout


def test_users_add_replace_sets_a_new_password_for_an_existing_user(tmp_path: Path) -> None:
    from gui_agent.auth import UserDB

    users = tmp_path / "users.json"
    add = ("users", "add", "bob", "--auth-file", str(users), "--password-stdin")
    assert run_cli(tmp_path, *add, typed="the first password\n").returncode == 0
    kept = run_cli(tmp_path, *add, typed="a second password\n")
    assert kept.returncode == 2 and "already exists" in kept.stderr
    replaced = run_cli(tmp_path, *add, "--replace", typed="a second password\n")
    assert replaced.returncode == 0, replaced.stderr
    assert UserDB(users).verify("bob", "a second password")
    assert not UserDB(users).verify("bob", "the first password")


def test_a_global_option_without_its_value_says_so_instead_of_taking_serve(
    tmp_path: Path,
) -> None:
    for option in ("--config", "--log-level"):
        result = run_cli(tmp_path, option)
        assert result.returncode == 2
        assert f"argument {option}: expected one argument" in result.stderr
        assert "serve" not in result.stderr.splitlines()[-1]


def test_the_terminal_chat_keeps_info_logs_out_of_the_conversation_unless_asked(
    tmp_path: Path,
) -> None:
    chat = ("chat", "--model", "scripted:echo", "--no-probe", "--workdir", str(tmp_path))
    quiet = run_cli(tmp_path, *chat, typed="hello\n/quit\n")
    assert quiet.returncode == 0, quiet.stderr
    assert "hello" in quiet.stdout
    assert quiet.stderr == ""  # nothing lands between the label and the reply on a terminal
    asked = run_cli(tmp_path, "--log-level", "info", *chat, typed="/quit\n")
    from_env = run_cli(tmp_path, *chat, typed="/quit\n", extra_env={"GUI_AGENT_LOG_LEVEL": "INFO"})
    for result in (asked, from_env):
        assert result.returncode == 0, result.stderr
        assert " INFO connectors.registry: model scripted:echo" in result.stderr


def test_models_shows_control_characters_in_a_model_name_instead_of_obeying_them(
    tmp_path: Path,
) -> None:
    # a probed local server names its models itself; here the name comes from --model
    name = "openai-compatible:http://127.0.0.1:9/v1#na\x1b]0;retitled\x07me"
    result = run_cli(tmp_path, "models", "--no-probe", "--model", name)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "default: openai-compatible:http://127.0.0.1:9/v1#na\u241b]0;retitled\u2407me" in (
        result.stdout
    )


def test_serve_refuses_a_login_length_out_of_range_saying_which(tmp_path: Path) -> None:
    for hours in ("0", "721"):
        result = run_cli(tmp_path, "serve", "--no-probe", "--token-hours", hours)
        assert result.returncode == 2, result.stderr
        assert "token_hours" in result.stderr and "1 to 720" in result.stderr
        assert "Traceback" not in result.stderr
    listed = run_cli(tmp_path, "serve", "--help")
    assert "--token-hours" in listed.stdout and "default 12" in listed.stdout
