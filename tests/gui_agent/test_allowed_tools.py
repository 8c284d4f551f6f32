"""How a chat treats each tool can be seen and changed.

A tool the person allowed for the session runs without asking; the interpreter says so
(`allowed_tools`, and a `session_updated` event), and `forget_allowed_tools` makes it ask
again, for one tool or for all. `tool_standings` says what each tool's next call does, and
`set_tool_mode` sets it for the chat (ask, allow, deny, or the app's own).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel, call
from gui_agent.exceptions import InvalidRequest
from schema import ApprovalDecision, Event, PermissionMode, SessionUpdated
from tests.gui_agent.helpers import answered, make, of_type


def _allowed_updates(events: list[Event]) -> list[list[str]]:
    return [
        e.fields["allowed_tools"]
        for e in events
        if isinstance(e, SessionUpdated) and "allowed_tools" in e.fields
    ]


async def test_allowing_for_the_session_is_announced_and_forgetting_asks_again(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(
        tmp_path,
        [
            call("write_file", path="a.txt", content="1"),
            "ok",
            call("write_file", path="b.txt", content="2"),
            "ok again",
            call("write_file", path="c.txt", content="3"),
            "asked",
        ],
    )
    assert interpreter.allowed_tools == ()
    events = await answered(interpreter, "first", ApprovalDecision.ALLOW_SESSION)
    assert _allowed_updates(events) == [["write_file"]]
    assert interpreter.allowed_tools == ("write_file",)

    events = [e async for e in interpreter.chat("second")]
    assert not of_type(events, "approval_requested")  # allowed: it ran without asking
    assert not _allowed_updates(events)  # nothing new to say

    async with interpreter.subscribe() as sub:
        assert interpreter.forget_allowed_tools() == ()
        said = sub.pending()
    assert _allowed_updates(said) == [[]]
    events = await answered(interpreter, "third", ApprovalDecision.DENY)
    assert not (tmp_path / "c.txt").exists()  # it asked again, and was denied
    assert (tmp_path / "b.txt").read_text() == "2"


async def test_one_tool_is_forgotten_and_forgetting_what_is_not_allowed_says_nothing(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path)
    interpreter.session.allowed_tools.update({"run_python", "write_file"})
    async with interpreter.subscribe() as sub:
        assert interpreter.forget_allowed_tools("no_such_tool") == ("run_python", "write_file")
        assert interpreter.forget_allowed_tools("run_python") == ("write_file",)
        said = sub.pending()
    assert _allowed_updates(said) == [["write_file"]]


async def test_each_tool_stands_as_its_chat_decides_and_a_mode_set_for_the_chat_holds(
    tmp_path: Path,
) -> None:
    interpreter, model = make(
        tmp_path,
        [
            call("write_file", path="a.txt", content="1"),
            "refused",
            call("write_file", path="b.txt", content="2"),
            "written",
        ],
    )
    modes = {s.name: (s.mode, s.chosen, s.destructive) for s in interpreter.tool_standings()}
    assert modes["write_file"] == (PermissionMode.ASK, None, True)
    assert modes["read_file"] == (PermissionMode.ALLOW, None, False)

    denied = await interpreter.set_tool_mode("write_file", PermissionMode.DENY)
    assert (denied.mode, denied.chosen) == (PermissionMode.DENY, PermissionMode.DENY)
    assert interpreter.session.settings.permissions == {"write_file": PermissionMode.DENY}
    events = [e async for e in interpreter.chat("write a")]
    assert not of_type(events, "approval_requested")  # refused without asking
    assert not (tmp_path / "a.txt").exists()
    assert isinstance(model, ScriptedModel)
    assert "not allowed in this chat" in model.requests[1].messages[-1].content

    await interpreter.set_tool_mode("write_file", PermissionMode.ALLOW)
    events = [e async for e in interpreter.chat("write b")]
    assert not of_type(events, "approval_requested")  # runs without asking
    assert (tmp_path / "b.txt").read_text() == "2"

    back = await interpreter.set_tool_mode("write_file", None)  # the app's own: asks first
    assert (back.mode, back.chosen) == (PermissionMode.ASK, None)
    assert interpreter.session.settings.permissions == {}
    with pytest.raises(InvalidRequest, match="no tool 'send_mail'; its tools: run_python"):
        await interpreter.set_tool_mode("send_mail", PermissionMode.ALLOW)


async def test_a_tool_allowed_for_the_session_stands_allowed_until_the_person_says_otherwise(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path)
    interpreter.session.allowed_tools.add("run_python")
    [python] = [s for s in interpreter.tool_standings() if s.name == "run_python"]
    assert (python.mode, python.allowed_for_session) == (PermissionMode.ALLOW, True)
    allowing = await interpreter.set_tool_mode("run_python", PermissionMode.ALLOW)
    assert (allowing.mode, allowing.allowed_for_session) == (PermissionMode.ALLOW, True)
    # "ask me first" now is the person's latest word: the allowance for the session goes
    asking = await interpreter.set_tool_mode("run_python", PermissionMode.ASK)
    assert (asking.mode, asking.allowed_for_session) == (PermissionMode.ASK, False)
    assert interpreter.allowed_tools == ()
    interpreter.session.allowed_tools.add("run_python")
    never = await interpreter.set_tool_mode("run_python", PermissionMode.DENY)
    assert (never.mode, never.allowed_for_session) == (PermissionMode.DENY, False)
