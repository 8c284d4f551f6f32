"""A call that needs approval but cannot run (its arguments are not JSON, lack a field, have
the wrong type or one too many) is answered at once with what is wrong, as a call that
needs no approval is: before, the person was asked to allow it (the turn waited up to the
approval timeout), and a denial told the model nothing about its broken arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel, calls
from gui_agent.tools import tool
from schema import (
    ApprovalDecision,
    ApprovalRequested,
    InterpreterState,
    ModelResponse,
    Role,
    StateChanged,
    ToolCall,
    ToolCallFinished,
)
from tests.gui_agent.helpers import make


@tool(destructive=True)
def remove(target: str, force: bool = False) -> str:
    """Remove a thing (asks first: destructive)."""
    return f"removed {target}{' by force' if force else ''}"


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ('{"target": "a.txt", "force": ', "not valid JSON"),
        ("{}", "target"),
        ('{"target": ["a", "b"]}', "target"),
        ('{"target": "a.txt", "recursive": true}', "recursive"),
        ("[1, 2]", "must be a JSON object"),
    ],
    ids=["cut-json", "missing", "wrong-type", "unknown", "not-an-object"],
)
async def test_a_call_that_cannot_run_is_answered_at_once_without_asking(
    tmp_path: Path, arguments: str, said: str
) -> None:
    broken = ToolCall(id="c1", name="remove", arguments=arguments)
    interpreter, model = make(tmp_path, [_reply(broken), "I will fix the call."], tools=[remove])
    events = [e async for e in interpreter.chat("remove a.txt")]  # no one answers approvals
    assert not [e for e in events if isinstance(e, ApprovalRequested)]
    states = [e.to_state for e in events if isinstance(e, StateChanged)]
    assert InterpreterState.WAITING not in states
    (finished,) = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.result.is_error and said in finished.result.content
    assert "remove" in finished.result.content  # names the tool, as a run would
    assert isinstance(model, ScriptedModel)
    told = model.requests[-1].messages[-1]  # the model reads why, in the next call
    assert told.role is Role.TOOL and told.content == finished.result.content


async def test_a_call_with_good_arguments_is_still_put_to_the_person(tmp_path: Path) -> None:
    good = ToolCall(id="c1", name="remove", arguments='{"target": "a.txt"}')
    interpreter, _ = make(tmp_path, [_reply(good), "Done."], tools=[remove])
    asked = []
    async for event in interpreter.chat("remove a.txt"):
        if isinstance(event, ApprovalRequested):
            asked.append(event)
            interpreter.approve(event.approval_id, ApprovalDecision.DENY)
    assert [a.call.id for a in asked] == ["c1"]


def _reply(call: ToolCall) -> ModelResponse:
    """A reply that makes `call`, its arguments as written (`calls` would encode them)."""
    return calls(("remove", {}, call.id)).model_copy(update={"tool_calls": (call,)})
