"""Messages sent while a turn runs wait for it, up to MAX_QUEUED; one more is refused in
words (Conflict), nothing queued is lost, and the queued messages are answered."""

from __future__ import annotations

from pathlib import Path

import pytest

from gui_agent.exceptions import Conflict
from gui_agent.interpreter import MAX_QUEUED
from schema import Role
from tests.gui_agent.helpers import make


async def test_a_message_past_the_queue_bound_is_refused_and_the_queued_ones_are_answered(
    tmp_path: Path,
) -> None:
    interpreter, _model = make(tmp_path, ["a slow first answer " * 20], delay_s=0.01)
    await interpreter.send("first")
    assert interpreter.busy
    for number in range(MAX_QUEUED):
        await interpreter.send(f"queued {number}")
    with pytest.raises(Conflict, match=f"{MAX_QUEUED} messages are already waiting"):
        await interpreter.send("one too many")
    await interpreter.wait_idle()
    asked = [m.content for m in interpreter.session.history if m.role is Role.USER]
    assert asked[0] == "first"
    assert asked[1:] == [f"queued {number}" for number in range(MAX_QUEUED)]
    assert "one too many" not in asked
    # (messages queued before the model is called go with that call: one answer for all)
    assert interpreter.session.history[-1].role is Role.ASSISTANT, "all of them answered"
    await interpreter.send("one too many")  # once the queue is read, it goes
    await interpreter.wait_idle()
    assert interpreter.session.history[-2].content == "one too many"
    await interpreter.close()
