"""Every line the core logs stays one printable line, whatever it quotes.

What a model server or a tool said, a chat title, a user name, a file a tool made, and the
message of an exception that quotes any of them are text GuiAgent did not write: a newline
in one would start a log record of its own (a forged line), an ESC would let a terminal
escape rewrite what a person reads. The core logs them through `gui_agent.log_text`, and a
traceback is written escaped on the record's one line (it would repeat the message raw).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from connectors.function import FunctionInfo, FunctionModel
from connectors.log_text import loggable as connectors_loggable
from connectors.scripted import ScriptedModel, call
from gui_agent import cli, workspaces
from gui_agent.agents.supervisor import DELEGATE
from gui_agent.changes import ChangeFeed, ChatChange, ChatChangeKind
from gui_agent.exceptions import ModelServerError, StoreError
from gui_agent.export import read_import
from gui_agent.hooks import call_hook
from gui_agent.interpreter import Interpreter
from gui_agent.log_text import (
    loggable,
    loggable_error,
    loggable_failure,
    loggable_traceback,
)
from gui_agent.quick import create_interpreter
from gui_agent.store import MemoryStore
from gui_agent.stream import StreamWrapper
from gui_agent.telemetry import tracing_from_env
from gui_agent.tokens import EstimateCounter, counter_for_encoding
from gui_agent.tools import ToolContext, ToolOutput, ToolRegistry, tool
from gui_agent.tools.definition import ApprovalView, approval_view
from gui_agent.tools.execution import execute_tool
from schema import AgentName, ErrorEvent, Message, ToolCall
from tests.gui_agent.helpers import scripted_manager

FOREIGN = "said:\n2030-01-01 CRITICAL root: all is well \x1b[2J"
"""What a server, a tool or a person could write: a forged record on a line of its own, and
a terminal escape that clears the screen."""
SHOWN = "said:\\n2030-01-01 CRITICAL root: all is well \\x1b[2J"
"""How it reads in the log."""


def one_line(caplog: pytest.LogCaptureFixture, logger: str, words: str) -> str:
    """The one record of `logger` saying `words`, rendered as a log line (a traceback
    `logging` carries with it included); it must be one printable line."""
    found = [r for r in caplog.records if r.name == logger and words in r.getMessage()]
    assert len(found) == 1, [r.getMessage() for r in caplog.records]
    line = logging.Formatter("%(levelname)s %(name)s: %(message)s").format(found[0])
    assert line.isprintable(), line
    return line


# --- the helpers ------------------------------------------------------------------------------


def test_connectors_log_through_the_same_function() -> None:
    assert connectors_loggable is loggable


def test_an_error_is_its_type_and_words_escaped() -> None:
    assert loggable_error(ValueError(FOREIGN)) == f"ValueError: {SHOWN}"
    assert loggable_error(ValueError()) == "ValueError"


def _raise_chained() -> None:
    try:
        raise KeyError(FOREIGN)
    except KeyError as cause:
        raise RuntimeError("while reading\nthe reply") from cause


def test_a_traceback_is_one_line_with_every_message_in_it_escaped() -> None:
    try:
        _raise_chained()
    except RuntimeError as error:
        shown = loggable_traceback(error)
    assert shown.isprintable()
    assert shown.startswith("Traceback (most recent call last):\\n")
    assert "in _raise_chained" in shown  # where it happened: worth having for a bug
    assert SHOWN in shown  # the cause's words, escaped
    assert shown.endswith("RuntimeError: while reading\\nthe reply")


def test_a_failure_raised_on_purpose_is_said_without_a_traceback() -> None:
    assert loggable_failure(StoreError(FOREIGN)) == f"StoreError: {SHOWN}"
    try:
        raise ZeroDivisionError(FOREIGN)
    except ZeroDivisionError as error:
        shown = loggable_failure(error)
    assert shown.startswith("Traceback") and shown.endswith(f"ZeroDivisionError: {SHOWN}")


# --- turns ------------------------------------------------------------------------------------


def crashing(messages: list[Message], info: FunctionInfo) -> Any:
    raise ValueError(FOREIGN)  # a bug in the agent, its message quoting the model


async def test_an_agent_that_crashes_is_logged_on_one_line_with_its_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    interpreter = create_interpreter(FunctionModel(crashing), workdir=tmp_path)
    _ = [e async for e in interpreter.chat("hello")]
    line = one_line(caplog, "gui_agent.turn", "agent failed")
    assert "Traceback (most recent call last):" in line and f"ValueError: {SHOWN}" in line


async def test_a_failed_run_task_is_logged_on_one_line_with_its_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    interpreter = create_interpreter(ScriptedModel(default="hi"), workdir=tmp_path)

    async def broken(outcome: object) -> Message | None:  # a bug between two turns
        raise RuntimeError(FOREIGN)

    monkeypatch.setattr(interpreter, "_next_prompt", broken)
    events = [e async for e in interpreter.chat("hello")]
    assert any(isinstance(e, ErrorEvent) and e.code == "internal" for e in events)
    line = one_line(caplog, "gui_agent.turn", "run task failed")
    assert "Traceback" in line and f"RuntimeError: {SHOWN}" in line


async def test_a_title_listener_that_fails_is_logged_on_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = create_interpreter(ScriptedModel(default="hi"), workdir=tmp_path)

    def listener(interpreter: Interpreter) -> None:  # (a title is one plain line: ESC is not)
        raise LookupError(f"no list shows\n{interpreter.session.title} \x1b[2J")

    interpreter = Interpreter(
        base.session, base.deps, architectures=base.architectures, on_titled=listener
    )
    _ = [e async for e in interpreter.chat("clear it please")]
    line = one_line(caplog, "gui_agent.turn", "on_titled failed")
    assert "LookupError: no list shows\\nclear it please \\x1b[2J" in line


async def test_a_worker_that_fails_is_logged_on_one_line_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gui_agent.agents.supervisor")
    model = ScriptedModel(
        [
            call(DELEGATE, worker="AGENT_EXECUTOR", task="Read the logs."),
            ModelServerError(FOREIGN, status=500, provider="scripted"),
            "The worker could not do it.",
        ]
    )
    interpreter = create_interpreter(model, workdir=tmp_path)
    await interpreter.set_agent(AgentName.SUPERVISOR)
    _ = [e async for e in interpreter.chat("what do the logs say?")]
    line = one_line(caplog, "gui_agent.agents.supervisor", "worker failed")
    assert f"ModelServerError: {SHOWN}" in line and "Traceback" not in line


async def test_a_hook_that_fails_is_logged_on_one_line(caplog: pytest.LogCaptureFixture) -> None:
    async def hook() -> None:
        raise RuntimeError(FOREIGN)

    await call_hook(hook())
    assert f"RuntimeError: {SHOWN}" in one_line(caplog, "gui_agent.hooks", "hook failed")


# --- saving -----------------------------------------------------------------------------------


class FailingStore(MemoryStore):
    """A store whose every message write fails with `error`."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    async def append_message(self, session_id: str, message: Message) -> None:
        raise self.error


@pytest.mark.parametrize(
    ("error", "words", "shown"),
    [
        (StoreError(FOREIGN), "could not save", f"could not save: {SHOWN}"),
        (ValueError(FOREIGN), "saving failed", f"ValueError: {SHOWN}"),
    ],
)
async def test_a_failed_save_is_logged_on_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, error: Exception, words: str, shown: str
) -> None:
    store = FailingStore(error)
    interpreter = create_interpreter(ScriptedModel(default="hi"), workdir=tmp_path, store=store)
    await store.create_session(interpreter.session.to_record(interpreter.state))
    _ = [e async for e in interpreter.chat("hello")]
    found = [
        r for r in caplog.records if r.name == "gui_agent.tracking" and words in r.getMessage()
    ]
    assert found, "the failed write is logged"
    for record in found:
        line = logging.Formatter("%(message)s").format(record)
        assert line.isprintable() and shown in line


# --- streams and listeners --------------------------------------------------------------------


class Reply:
    """A provider's reply stream whose closing fails, saying what the server said."""

    def __aiter__(self) -> Reply:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration

    async def aclose(self) -> None:
        raise ValueError(FOREIGN)

    def __repr__(self) -> str:
        return "<reply of model\nx>"


async def test_a_stream_source_that_fails_to_close_is_logged_on_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    await StreamWrapper(Reply()).aclose()
    line = one_line(caplog, "gui_agent.stream", "closing the stream source")
    assert "<reply of model\\nx>" in line and f"ValueError: {SHOWN}" in line


def test_a_chats_listener_that_fails_is_logged_on_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    feed = ChangeFeed()
    owner = "ann\nFORGED"

    def listener(change: ChatChange) -> None:
        raise RuntimeError(f"cannot show {change.title}")

    feed.listen(owner, listener)
    feed.announce(ChatChange(ChatChangeKind.RENAMED, owner, "s1", FOREIGN))
    line = one_line(caplog, "gui_agent.changes", "chats failed")
    assert "ann\\nFORGED's chats" in line and f"RuntimeError: cannot show {SHOWN}" in line


# --- tools ------------------------------------------------------------------------------------


def _view(arguments: dict[str, Any]) -> ApprovalView:
    raise LookupError(f"no such file: {arguments['path']}")  # a bug, quoting the model


@tool(destructive=True, approval_view=_view)
def remove_file(path: str) -> str:
    """Remove a file."""
    return f"removed {path}"


def test_an_approval_view_that_fails_is_logged_on_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    arguments = json.dumps({"path": FOREIGN})
    view = approval_view(remove_file, ToolCall(id="c1", name="remove_file", arguments=arguments))
    assert view.detail == json.dumps({"path": FOREIGN}, indent=2)  # the raw arguments instead
    line = one_line(caplog, "gui_agent.tools.definition", "approval view of remove_file failed")
    assert "Traceback" in line and f"LookupError: no such file: {SHOWN}" in line


class Shown:
    """A value a tool returns whose text cannot be made: it says why, quoting the tool."""

    def __str__(self) -> str:
        raise ValueError(FOREIGN)


@tool
def raises(what: str) -> str:
    """Fails, quoting what it read."""
    raise OSError(FOREIGN)


@tool
async def cancelled_inside() -> str:
    """Something it awaited was cancelled."""
    raise asyncio.CancelledError(FOREIGN)


@tool
def asks_a_model() -> str:
    """Asks a model, which fails."""
    raise ModelServerError(FOREIGN, status=502, provider="scripted")


@tool
def odd_metadata() -> ToolOutput:
    """Metadata json cannot write."""
    return ToolOutput(content="done", metadata={"value": Shown()})


@tool
def odd_result() -> Any:
    """A result json cannot write."""
    return {"value": Shown()}


@pytest.mark.parametrize(
    ("name", "words", "shown"),
    [
        ("raises", "tool raises raised", f"OSError: {SHOWN}"),
        ("cancelled_inside", "raised CancelledError by itself", f"CancelledError: {SHOWN}"),
        ("asks_a_model", "tool asks_a_model raised ModelServerError", SHOWN),
        ("odd_metadata", "metadata is not JSON", f"({SHOWN})"),
        ("odd_result", "is not JSON", f"({SHOWN})"),
    ],
)
async def test_what_a_tool_did_wrong_is_logged_on_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, words: str, shown: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="gui_agent.tools.execution")
    registry = ToolRegistry([raises, cancelled_inside, asks_a_model, odd_metadata, odd_result])
    context = ToolContext(session_id="s", run_id="r", call_id="c", workdir=tmp_path)
    arguments = '{"what": "x"}' if name == "raises" else "{}"
    await execute_tool(registry, ToolCall(id="c", name=name, arguments=arguments), context)
    line = one_line(caplog, "gui_agent.tools.execution", words)
    assert shown in line


# --- people, chats and files ------------------------------------------------------------------

NAME = "ann\n2030-01-01 INFO root: bob let in \x1b[2J"
NAME_SHOWN = "ann\\n2030-01-01 INFO root: bob let in \\x1b[2J"


async def test_a_user_name_is_logged_escaped_when_revoked_and_readmitted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="gui_agent.manager")
    manager = scripted_manager(tmp_path)
    await manager.start()
    try:
        await manager.revoke(NAME)
        manager.readmit(NAME)
    finally:
        await manager.close()
    revoked = one_line(caplog, "gui_agent.manager", "revoked")
    assert revoked.startswith(f"DEBUG gui_agent.manager: {NAME_SHOWN} revoked")
    assert NAME_SHOWN in one_line(caplog, "gui_agent.manager", "readmitted")


def test_an_import_names_its_owner_escaped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="gui_agent.export")
    document = {
        "format": "gui-agent-session",
        "version": 1,
        "session": {"title": "t", "settings": {"permissions": {"run_python": "allow"}}},
        "messages": [{"role": "user", "content": "hello"}],
    }
    read_import(json.dumps(document), owner=NAME)
    assert f"for {NAME_SHOWN}: reset" in one_line(caplog, "gui_agent.export", "reset")


def test_a_file_a_tool_made_that_cannot_be_deleted_is_named_escaped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = workspaces.session_folder(tmp_path, "local", "s1")
    folder.mkdir(parents=True)
    made = str(folder / f"notes {FOREIGN}.txt")  # a name the code the model wrote chose

    def stuck(path: Any, onerror: Callable[[Any, str, Any], None]) -> None:
        onerror(os.unlink, made, None)  # (it is not there: the retry fails, as a stuck file)

    monkeypatch.setattr(shutil, "rmtree", stuck)
    assert workspaces.remove_session_folder(tmp_path, "local", "s1")
    line = one_line(caplog, "gui_agent.workspaces", "could not be deleted")
    assert f"notes {SHOWN}.txt" in line


# --- configuration ----------------------------------------------------------------------------


def test_an_encoding_that_cannot_load_is_named_escaped(caplog: pytest.LogCaptureFixture) -> None:
    counter = counter_for_encoding(f"made-up-{id(caplog)}\n\x1b[2J")
    assert isinstance(counter, EstimateCounter)
    line = one_line(caplog, "gui_agent.tokens", "token counts are estimates")
    assert "\\n\\x1b[2J" in line


def test_an_unknown_trace_mode_is_named_escaped(caplog: pytest.LogCaptureFixture) -> None:
    tracing_from_env({"GUI_AGENT_TRACE": FOREIGN})
    assert SHOWN.lower() in one_line(caplog, "gui_agent.telemetry", "not supported")


def test_a_failed_command_is_logged_on_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GRADIO_ANALYTICS_ENABLED", "HF_HUB_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        monkeypatch.setenv(name, os.environ.get(name, "1"))  # (the command sets them)
    caplog.set_level(logging.DEBUG, logger="gui_agent")
    config = tmp_path / f"settings {FOREIGN}.toml"
    assert cli.main(["--config", str(config), "models", "--no-probe"]) == 2
    line = one_line(caplog, "gui_agent", "command failed")
    assert f"settings {SHOWN}.toml" in line
