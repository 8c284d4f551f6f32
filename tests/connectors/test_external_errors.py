"""An external interpreter that reports an error in its own chunk format: the person sees
the interpreter's words as the turn's error, the partial reply is kept, and the session
goes on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from connectors.external import ExternalInterpreterAgent
from connectors.scripted import ScriptedModel
from gui_agent.agents import default_architectures
from gui_agent.quick import create_interpreter
from schema import AgentName, ErrorEvent, MessageStatus, RunFinished, RunOutcome
from tests.gui_agent.helpers import of_type


def failing_then_fine() -> Iterator[Iterator[dict[str, Any]]]:
    yield iter(
        [
            {"role": "assistant", "type": "message", "start": True},
            {"role": "assistant", "type": "message", "content": "Working on it"},
            {"role": "server", "type": "error", "content": "Traceback ...\nKeyError: 'model'\n"},
            {"role": "assistant", "type": "message", "content": " never shown"},
        ]
    )
    while True:
        yield iter([{"role": "assistant", "type": "message", "content": "All good now."}])


async def test_an_error_chunk_is_the_turns_error_and_the_session_goes_on(tmp_path: Path) -> None:
    replies = failing_then_fine()

    def chat(message: Any) -> Iterator[dict[str, Any]]:
        return next(replies)

    roles = dict(default_architectures())
    roles[AgentName.OTHER] = ExternalInterpreterAgent(chat)
    interpreter = create_interpreter(
        ScriptedModel(), architectures=roles, workdir=tmp_path, agent=AgentName.OTHER
    )
    events = [e async for e in interpreter.chat("do it")]
    errors = [e for e in of_type(events, "error") if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and "KeyError: 'model'" in errors[0].message
    assert "interpreter reported an error" in errors[0].message
    finished = [e for e in of_type(events, "run_finished") if isinstance(e, RunFinished)]
    assert finished[-1].outcome is RunOutcome.ERROR
    partial = interpreter.session.history[-1]
    assert partial.content == "Working on it" and partial.status is MessageStatus.ERROR
    _ = [e async for e in interpreter.chat("again")]
    assert interpreter.session.history[-1].content == "All good now."
