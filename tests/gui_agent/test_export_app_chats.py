"""Chats the app itself wrote import back: a plan whose step begins with "File:" (the
planner keeps each step's text in the step message's metadata) is prose, not a file URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from gui_agent.exceptions import InvalidRequest
from gui_agent.export import encode_export, read_import
from schema import AgentName, Message, Role, SessionRecord
from tests.gui_agent.helpers import make

PLAN = "1. File: notes.txt - write the summary into it\n2. Say it is done"


async def test_a_planned_chat_whose_step_names_a_file_exports_and_imports_back(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path, [PLAN, "Written.", "Done."])
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    _ = [e async for e in interpreter.chat("summarise the meeting")]
    history = interpreter.session.history
    assert history[2].metadata["step"].startswith("File: notes.txt")

    encoded = encode_export(interpreter.session.to_record(interpreter.state), history)
    assert encoded.problem is None
    assert read_import(encoded.data, owner="me").messages == list(history)


@pytest.mark.parametrize("url", ["file:///etc/passwd", " FILE:/etc/shadow", "file://host/x"])
def test_file_urls_in_metadata_are_still_refused(url: str) -> None:
    message = Message(role=Role.ASSISTANT, content="hi", metadata={"step": url})
    encoded = encode_export(SessionRecord(owner="me", title="t"), [message])
    assert encoded.problem == "message 0: metadata holds a file: URL"
    with pytest.raises(InvalidRequest, match="metadata holds a file: URL"):
        read_import(encoded.data, owner="me")
