"""A reply the model cut off at its output limit is marked so, and says so."""

from __future__ import annotations

from pathlib import Path

from gui_agent.repl import CUT_OFF_NOTE, format_event
from schema import MessageCompleted, ModelResponse, Role
from tests.gui_agent.helpers import make, of_type


async def test_a_reply_cut_off_at_the_output_limit_is_marked_and_the_terminal_says_so(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(
        tmp_path,
        [ModelResponse(text="The first three reasons are: one, two, th", finish_reason="length")],
    )
    events = [e async for e in interpreter.chat("list the reasons")]
    reply = interpreter.session.history[-1]
    assert reply.role is Role.ASSISTANT and reply.metadata.get("cut_off") is True
    completed = [e for e in of_type(events, "message_completed") if isinstance(e, MessageCompleted)]
    line = format_event(completed[-1])
    assert line is not None and CUT_OFF_NOTE in line


async def test_a_reply_that_ended_by_itself_is_not_marked(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, [ModelResponse(text="Done.", finish_reason="stop")])
    events = [e async for e in interpreter.chat("hi")]
    assert "cut_off" not in interpreter.session.history[-1].metadata
    completed = [e for e in of_type(events, "message_completed") if isinstance(e, MessageCompleted)]
    assert format_event(completed[-1]) is None
