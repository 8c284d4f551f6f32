"""What "Allow for this session" leaves behind can be seen and taken back.

A tool the person allowed for the session runs without asking; the interpreter says so
(`allowed_tools`, and a `session_updated` event), and `forget_allowed_tools` makes it ask
again, for one tool or for all.
"""

from __future__ import annotations

from pathlib import Path

from connectors.scripted import call
from schema import ApprovalDecision, Event, SessionUpdated
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
