"""A tool call refused before it ran (the person denied it, the session does not allow the
tool, or the model's output limit cut its arguments off) is an error for the model, which
reads why, and is marked `not_run` for the people looking: the terminal says "not run"
where it would give a run's time. A call that ran and failed is not marked."""

from __future__ import annotations

from pathlib import Path

from connectors.scripted import call
from gui_agent.agents.tool_step import NOT_RUN
from gui_agent.interpreter import Interpreter
from gui_agent.repl_display import format_event
from schema import (
    ApprovalDecision,
    Event,
    ModelResponse,
    PermissionMode,
    ToolCall,
    ToolCallFinished,
)
from tests.gui_agent.helpers import answered, make


def finished(events: list[Event]) -> ToolCallFinished:
    (done,) = [e for e in events if isinstance(e, ToolCallFinished)]
    return done


async def finished_after(interpreter: Interpreter, text: str) -> ToolCallFinished:
    """The one tool call's end in the turn `text` starts."""
    return finished([e async for e in interpreter.chat(text)])


async def test_a_call_the_person_denies_is_marked_not_run_in_its_result_and_message(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path, [call("write_file", path="a.txt", content="x"), "Fine."])
    done = finished(await answered(interpreter, "write", ApprovalDecision.DENY, "not that file"))
    assert done.result.is_error and done.result.metadata == {NOT_RUN: True}
    (kept,) = [m for m in interpreter.session.history if m.tool_call_id == done.result.call_id]
    assert kept.metadata[NOT_RUN] is True and kept.metadata["is_error"] is True
    assert format_event(done) == "\n  ✗ write_file (not run)"


async def test_a_call_the_session_does_not_allow_is_marked_not_run(tmp_path: Path) -> None:
    interpreter, _ = make(
        tmp_path,
        [call("run_python", code="print(1)"), "fine"],
        permissions={"run_python": PermissionMode.DENY},
    )
    done = await finished_after(interpreter, "go")
    assert done.result.metadata.get(NOT_RUN) is True
    assert "not allowed" in done.result.content


async def test_a_call_cut_off_by_the_output_limit_is_marked_not_run(tmp_path: Path) -> None:
    cut = ToolCall(id="c1", name="write_file", arguments='{"path": "a.txt", "content": "ab')
    reply = ModelResponse(tool_calls=(cut,), finish_reason="length")
    interpreter, _ = make(tmp_path, [reply, "I will write it in parts."])
    done = await finished_after(interpreter, "write a long file")
    assert done.result.metadata.get(NOT_RUN) is True
    assert done.result.content.startswith("Not run: your reply reached the output limit")


async def test_a_call_that_ran_and_failed_is_not_marked(tmp_path: Path) -> None:
    interpreter, _ = make(
        tmp_path,
        [call("read_file", path="missing.txt"), "It is not there."],
        permissions={"read_file": PermissionMode.ALLOW},
    )
    done = await finished_after(interpreter, "read it")
    assert done.result.is_error and NOT_RUN not in done.result.metadata
    line = format_event(done)
    assert line is not None and line.startswith("\n  ✗ read_file (") and line.endswith(" ms)")
