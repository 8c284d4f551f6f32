"""`gui-agent chat` when the person mistypes, presses Ctrl-C at a question, or input ends.

The chat runs in a real subprocess: the real `gui_agent.cli.main`, with `resolve_models`
swapped for a scripted model that calls tools, so the approval prompt is reached offline.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from gui_agent.exceptions import InvalidRequest
from gui_agent.repl import parse_role
from gui_agent.repl_commands import run_command
from schema import AgentName, Message, Role
from tests.gui_agent.helpers import scripted_manager

# argv[1]: the model's replies as JSON, each a text or {"tool": NAME, "args": {...}}
DRIVER = """
import json, sys
import connectors.registry
from connectors.scripted import ScriptedModel, call
from gui_agent.cli import main
from gui_agent.llm import StaticCatalog

script = json.loads(sys.argv[1])
replies = [r if isinstance(r, str) else call(r["tool"], **r["args"]) for r in script]

async def resolve_models(**_options):
    return StaticCatalog(ScriptedModel(replies, name="scripted:tools", default="(no more replies)"))

connectors.registry.resolve_models = resolve_models
sys.exit(main(["chat", *sys.argv[2:]]))
"""

WRITE_A_FILE = {"tool": "write_file", "args": {"path": "a.txt", "content": "hi"}}


def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    clean["GUI_AGENT_DATA_DIR"] = str(tmp_path / "data")
    clean["HOME"] = str(tmp_path)
    return clean


def chat_argv(replies: Sequence[object], workdir: Path) -> list[str]:
    return [sys.executable, "-c", DRIVER, json.dumps(replies), "--workdir", str(workdir)]


def run_chat(
    tmp_path: Path, replies: Sequence[object], workdir: Path, typed: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        chat_argv(replies, workdir),
        input=typed,
        capture_output=True,
        text=True,
        env=env(tmp_path),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )


async def read_until(stream: asyncio.StreamReader, marker: bytes, seen: bytes = b"") -> bytes:
    """Everything read up to and including `marker` (fails after 30 s or at end of output)."""
    async with asyncio.timeout(30):
        while marker not in seen:
            chunk = await stream.read(4096)
            assert chunk, seen[-2000:]
            seen += chunk
    return seen


def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


# -- mistyped commands ----------------------------------------------------------------------


def test_bad_commands_print_one_line_each_and_the_chat_goes_on(tmp_path: Path) -> None:
    typed = "\n".join(
        [
            "first message",
            "/role executor",
            "/role OTHER",
            "/model nope",
            "/auto maybe",
            "/role planner",
            "/nonsense",
            "/role EXECUTOR",
            "still here",
            "/quit",
            "",
        ]
    )
    result = run_chat(tmp_path, ["one", "two"], workspace(tmp_path), typed)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    out = result.stdout
    assert (
        "unknown role 'OTHER'; choose one of: executor, planner, supervisor, crew, thought" in out
    )
    assert "unknown model 'nope'; choose one of: scripted:tools" in out
    assert "usage: /auto on|off" in out
    assert "unknown command /nonsense; commands:" in out
    assert out.count("role: executor") == 2
    assert "role: planner" in out
    assert out.index("[Executor] one") < out.index("[Executor] two")  # same chat


def test_role_names_as_the_readme_says_them_or_as_the_enum_does() -> None:
    roles = list(AgentName)
    assert parse_role("executor", roles) is AgentName.AGENT_EXECUTOR
    assert parse_role("Planner", roles) is AgentName.LLM_PLANNER
    assert parse_role("llm_planner", roles) is AgentName.LLM_PLANNER
    assert parse_role("SUPERVISOR", roles) is AgentName.SUPERVISOR
    assert parse_role("crew", roles) is AgentName.CREW
    assert parse_role("thought", roles) is AgentName.THOUGHT
    offered = [AgentName.AGENT_EXECUTOR, AgentName.CREW]
    with pytest.raises(InvalidRequest, match=r"choose one of: executor, crew$"):
        parse_role("planner", offered)


# -- Ctrl-C and end of input at the approval prompt -----------------------------------------


async def test_ctrl_c_at_the_approval_prompt_stops_the_turn_and_the_next_line_is_a_message(
    tmp_path: Path,
) -> None:
    folder = workspace(tmp_path)
    argv = chat_argv([WRITE_A_FILE, "answer to the next message"], folder)
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env(tmp_path),
        cwd=tmp_path,
    )
    assert process.stdin and process.stdout
    process.stdin.write(b"write a file\n")
    await process.stdin.drain()
    seen = await read_until(process.stdout, b"allow?")
    process.send_signal(signal.SIGINT)
    seen = await read_until(process.stdout, b"(interrupted", seen)
    after_stop = await read_until(process.stdout, b"you> ", seen[seen.index(b"(interrupted") :])
    assert process.returncode is None
    process.stdin.write(b"hello again\n")
    await process.stdin.drain()
    await read_until(process.stdout, b"answer to the next message", after_stop)
    process.stdin.write(b"/quit\n")
    await process.stdin.drain()
    async with asyncio.timeout(30):
        await process.communicate()
    assert process.returncode == 0
    assert not (folder / "a.txt").exists()


def test_end_of_input_at_the_approval_prompt_denies_and_ends_the_chat(tmp_path: Path) -> None:
    folder = workspace(tmp_path)
    result = run_chat(tmp_path, [WRITE_A_FILE, "wrote it"], folder, "write a file\n")
    assert result.returncode == 0, result.stderr
    assert "(end of input: denied)" in result.stdout
    assert "approval: deny" in result.stdout
    assert "wrote it" in result.stdout  # the turn went on after the denial
    assert not (folder / "a.txt").exists()


# -- --workdir -------------------------------------------------------------------------------


def test_workdir_is_the_folder_the_tools_use(tmp_path: Path) -> None:
    folder = workspace(tmp_path)
    (folder / "existing.txt").write_text("notes from before\n")
    replies = [
        {"tool": "read_file", "args": {"path": "existing.txt"}},
        "read it",
        WRITE_A_FILE,
        "wrote it",
    ]
    result = run_chat(tmp_path, replies, folder, "read my notes\nwrite a file\ny\n/quit\n")
    assert result.returncode == 0, result.stderr
    assert "notes from before" in result.stdout
    assert (folder / "a.txt").read_text() == "hi"
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == [
        "a.txt",
        "existing.txt",
    ]


def test_workdir_that_is_not_a_folder_is_a_clear_error(tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    result = run_chat(tmp_path, ["hi"], a_file, "hello\n")
    assert result.returncode == 2
    assert "--workdir" in result.stderr and "is not a folder" in result.stderr
    assert "Traceback" not in result.stderr


async def test_the_window_command_counts_in_words_that_agree(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path)
    await manager.start()
    try:
        interpreter = await manager.create("local")
        alone = await run_command("/window", [], interpreter, manager)  # the system prompt
        assert alone.startswith("1 message, ") and alone.endswith(" tokens in the window\n")
        interpreter.session.add(Message(role=Role.USER, content="hi"))
        said = await run_command("/window", [], interpreter, manager)
        assert said.startswith("2 messages, ") and said.endswith(" tokens in the window\n")
    finally:
        await manager.close()


async def test_the_allowed_command_lists_and_forgets_the_tools_allowed_for_the_session(
    tmp_path: Path,
) -> None:
    manager = scripted_manager(tmp_path)
    await manager.start()
    try:
        interpreter = await manager.create("local")
        said = await run_command("/allowed", [], interpreter, manager)
        assert said == "no tool allowed for this chat: each that changes things asks first\n"
        said = await run_command("/allowed", ["forget"], interpreter, manager)
        assert said == "no tool was allowed for this chat\n"
        interpreter.session.allowed_tools.update({"run_python", "write_file"})
        said = await run_command("/allowed", [], interpreter, manager)
        assert said == "run without asking in this chat: run_python, write_file\n"
        with pytest.raises(InvalidRequest, match="'read_file' is not allowed"):
            await run_command("/allowed", ["forget", "read_file"], interpreter, manager)
        with pytest.raises(InvalidRequest, match="usage: /allowed"):
            await run_command("/allowed", ["drop"], interpreter, manager)
        said = await run_command("/allowed", ["forget", "write_file"], interpreter, manager)
        assert said == "asks again before it runs: write_file\n"
        said = await run_command("/ALLOWED", ["Forget"], interpreter, manager)
        assert said == "asks again before it runs: run_python\n"
        assert interpreter.allowed_tools == ()
    finally:
        await manager.close()
