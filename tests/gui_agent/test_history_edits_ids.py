"""Retry and edit naming the message they mean: one the chat never had (or no longer has)
is no such message, a message of the model's is not the person's, and only one of the
person's that another followed is the stale case (Conflict)."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel
from gui_agent.exceptions import Conflict, InvalidRequest
from gui_agent.quick import create_interpreter


async def test_a_message_id_the_chat_never_had_is_no_such_message(tmp_path: Path) -> None:
    """It was Conflict, "another was sent since (in another tab or window)": nobody had."""
    interpreter = create_interpreter(ScriptedModel(default="ok"), workdir=tmp_path)
    first = await interpreter.send("the first")
    await interpreter.wait_idle()
    await interpreter.send("the second")
    await interpreter.wait_idle()
    before = list(interpreter.session.history)
    with pytest.raises(InvalidRequest, match="no such message in this chat to retry"):
        await interpreter.retry(message_id="nope")
    with pytest.raises(InvalidRequest, match="no such message in this chat to edit"):
        await interpreter.edit_last("edited", message_id="nope")
    reply = before[-1]
    with pytest.raises(InvalidRequest, match="not yours"):
        await interpreter.retry(message_id=reply.id)
    with pytest.raises(Conflict, match="another was sent since"):  # stale: still 409
        await interpreter.retry(message_id=first.id)
    assert interpreter.session.history == before
    await interpreter.close()
