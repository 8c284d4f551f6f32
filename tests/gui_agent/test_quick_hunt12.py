"""The Python API takes what Python code naturally passes, or says at once what is wrong:
roles and decisions by name, a folder as a string, permissions only for tools it has, a
temporary folder that goes with its interpreter, and a model function's reply that is no
reply."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest

from connectors.function import FunctionInfo, FunctionModel
from connectors.scripted import ScriptedModel, call
from gui_agent.exceptions import ConfigError, Conflict, InvalidRequest
from gui_agent.quick import chat_sync, create_interpreter
from gui_agent.tools import tool
from schema import (
    AgentName,
    ApprovalDecision,
    ApprovalRequested,
    ErrorEvent,
    InterpreterState,
    Message,
    PermissionMode,
    Role,
    ToolCallFinished,
)


@tool(destructive=True)
def launch(target: str) -> str:
    """Launch something (asks first: it is destructive)."""
    return f"launched {target}"


def asking_model() -> ScriptedModel:
    return ScriptedModel([call("launch", target="probe"), "done"])


def finished(events: list[Any]) -> list[ToolCallFinished]:
    return [e for e in events if isinstance(e, ToolCallFinished)]


def test_a_role_is_taken_by_the_name_people_use_or_refused_with_the_choices(
    tmp_path: Path,
) -> None:
    """`agent="planner"` failed with AttributeError while wording its own refusal."""
    for name in ("planner", "LLM_PLANNER", " Planner "):
        interpreter = create_interpreter(ScriptedModel(), workdir=tmp_path, agent=name)
        assert interpreter.session.agent is AgentName.LLM_PLANNER
    with pytest.raises(InvalidRequest, match="unknown role 'nobody'; choose one of: executor, "):
        create_interpreter(ScriptedModel(), workdir=tmp_path, agent="nobody")


async def test_a_folder_given_as_text_is_the_one_the_tools_work_in(tmp_path: Path) -> None:
    """A str workdir was taken as it was, and every file tool then failed on it."""
    folder = tmp_path / "work"
    folder.mkdir()
    model = ScriptedModel([call("write_file", path="note.txt", content="hi"), "ok"])
    interpreter = create_interpreter(
        model, workdir=str(folder), permissions={"write_file": "allow"}
    )
    events = [e async for e in interpreter.chat("write it")]
    (result,) = finished(events)
    assert not result.result.is_error, result.result.content
    assert (folder / "note.txt").read_text() == "hi"
    await interpreter.close()
    assert (folder / "note.txt").exists()  # a folder the caller gave is theirs: kept


async def test_the_temporary_folder_made_for_an_interpreter_goes_when_it_is_closed() -> None:
    """Every create_interpreter() without a workdir left a /tmp/gui-agent-* folder behind."""
    model = ScriptedModel([call("write_file", path="a.txt", content="x"), "ok"])
    interpreter = create_interpreter(model, permissions={"write_file": "allow"})
    folder = interpreter.session.workdir_path()
    [e async for e in interpreter.chat("write")]
    assert (folder / "a.txt").exists()
    await interpreter.close()
    assert not folder.exists()
    dropped = create_interpreter(ScriptedModel())
    other = dropped.session.workdir_path()
    assert other.is_dir()
    del dropped  # never closed: it goes when the interpreter is collected
    gc.collect()
    assert not other.exists()


def test_a_permission_for_a_tool_the_interpreter_lacks_is_refused_with_the_closest_name(
    tmp_path: Path,
) -> None:
    """A misspelt tool in a deny rule did nothing, and the tool ran."""
    with pytest.raises(
        ConfigError, match=r"'read_fle', which is no tool here; did you mean 'read_f"
    ):
        create_interpreter(ScriptedModel(), workdir=tmp_path, permissions={"read_fle": "deny"})
    with pytest.raises(ConfigError, match=r"no tool here \(tools: launch, task_complete\)"):
        create_interpreter(
            ScriptedModel(),
            workdir=tmp_path,
            tools=[launch],
            builtin_tools=False,
            permissions={"run_python": PermissionMode.DENY},
        )
    allowed = create_interpreter(
        ScriptedModel(), workdir=tmp_path, permissions={"read_file": "deny"}
    )
    assert allowed.deps.permissions.modes == {"read_file": PermissionMode.DENY}


async def test_an_approval_given_by_its_value_runs_the_call_and_a_wrong_one_keeps_it_open(
    tmp_path: Path,
) -> None:
    """approve(id, "allow_once") was taken, then failed the whole turn with AttributeError
    when the step read it; the call was not run."""
    interpreter = create_interpreter(
        asking_model(), workdir=tmp_path, tools=[launch], builtin_tools=False
    )
    events = []
    async for event in interpreter.chat("launch the probe"):
        events.append(event)
        if isinstance(event, ApprovalRequested):
            with pytest.raises(InvalidRequest, match="one of 'allow_once', 'allow_session', "):
                interpreter.approve(event.approval_id, "yes")
            assert event.approval_id in [a.approval_id for a in interpreter.pending_approvals]
            assert interpreter.approve(event.approval_id, "allow_once")
    (result,) = finished(events)
    assert result.result.content == "launched probe"
    assert not [e for e in events if isinstance(e, ErrorEvent)]


def test_chat_sync_takes_a_decision_by_value_or_from_an_async_function(tmp_path: Path) -> None:
    async def later(request: ApprovalRequested) -> str:
        await asyncio.sleep(0)
        return "ALLOW_ONCE"

    for approve in (lambda request: "allow_once", later):
        interpreter = create_interpreter(
            asking_model(), workdir=tmp_path, tools=[launch], builtin_tools=False
        )
        events = chat_sync(interpreter, "launch", approve=approve)
        (result,) = finished(events)
        assert result.result.content == "launched probe"


def test_chat_sync_stops_the_turn_when_the_approve_function_gives_no_decision(
    tmp_path: Path,
) -> None:
    """An approve function returning None or "yes" failed the turn with a pydantic error."""
    interpreter = create_interpreter(
        asking_model(), workdir=tmp_path, tools=[launch], builtin_tools=False
    )
    with pytest.raises(InvalidRequest, match="not None"):
        chat_sync(interpreter, "launch", approve=lambda request: None)  # type: ignore[arg-type,return-value]
    assert interpreter.state is InterpreterState.STOP
    answers = [m for m in interpreter.session.history if m.role is Role.TOOL]
    assert [m.metadata.get("is_error") for m in answers] == [True]
    assert "launched" not in answers[0].content, answers[0]


async def test_a_model_function_returning_a_dict_is_refused_not_streamed_as_its_keys(
    tmp_path: Path,
) -> None:
    """A dict iterates into its keys: the reply read "rolecontent"."""

    def reply(messages: list[Message], info: FunctionInfo) -> Any:
        return {"role": "assistant", "content": "hi"}

    interpreter = create_interpreter(FunctionModel(reply), workdir=tmp_path)
    events = [e async for e in interpreter.chat("hello")]
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert "returned dict; return a str, a ModelResponse" in error.message
    assert [m.content for m in interpreter.session.history if m.role is Role.ASSISTANT] in (
        [],
        [""],
    )


async def test_a_role_is_switched_to_by_name_too(tmp_path: Path) -> None:
    """set_agent("thought") and send(..., agent="planner") failed with AttributeError."""
    interpreter = create_interpreter(ScriptedModel(default="ok"), workdir=tmp_path)
    await interpreter.set_agent("thought")
    assert interpreter.session.agent is AgentName.THOUGHT
    await interpreter.send("plan it", agent="planner")
    await interpreter.wait_idle()
    assert interpreter.session.agent is AgentName.LLM_PLANNER
    with pytest.raises(InvalidRequest, match="unknown role 'nobody'; choose one of: executor"):
        await interpreter.set_agent("nobody")
    await interpreter.close()


async def test_an_edit_of_a_message_no_longer_last_changes_nothing(tmp_path: Path) -> None:
    """Tab A began editing its message; tab B sent another since: the edit replaced B's
    message and dropped its reply, without a word."""
    interpreter = create_interpreter(ScriptedModel(default="ok"), workdir=tmp_path)
    first = await interpreter.send("the message A edits")
    await interpreter.wait_idle()
    await interpreter.send("B's message, sent since")
    await interpreter.wait_idle()
    before = list(interpreter.session.history)
    with pytest.raises(Conflict, match="no longer the one you meant to edit"):
        await interpreter.edit_last("A's edit", message_id=first.id)
    with pytest.raises(Conflict, match="no longer the one you meant to retry"):
        await interpreter.retry(message_id=first.id)
    assert interpreter.session.history == before
    await interpreter.edit_last("B's message, edited", message_id=before[-2].id)
    await interpreter.wait_idle()
    assert [m.content for m in interpreter.session.history][-2] == "B's message, edited"
    await interpreter.close()


def test_an_approve_function_that_raises_ends_the_turn_saying_so(tmp_path: Path) -> None:
    """The call's answer said "stopped by the user": nobody had stopped anything."""
    interpreter = create_interpreter(
        asking_model(), workdir=tmp_path, tools=[launch], builtin_tools=False
    )

    def approve(request: object) -> ApprovalDecision:
        raise ZeroDivisionError("a bug in the approver")

    with pytest.raises(ZeroDivisionError):
        chat_sync(interpreter, "launch", approve=approve)
    assert interpreter.state is InterpreterState.STOP
    [answer] = [m for m in interpreter.session.history if m.role is Role.TOOL]
    assert "the approve function failed: ZeroDivisionError: a bug in the approver" in (
        answer.content
    )
    assert "by the user" not in answer.content
