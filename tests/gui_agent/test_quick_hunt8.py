"""create_interpreter: the session starts in a role it really has."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel
from gui_agent.agents import CrewAgent
from gui_agent.exceptions import InvalidRequest
from gui_agent.quick import create_interpreter
from schema import AgentName, AgentSwitched


async def test_a_session_starts_in_the_first_of_its_own_roles(tmp_path: Path) -> None:
    model = ScriptedModel(["done", "checked"])
    interpreter = create_interpreter(
        model, workdir=tmp_path, architectures={AgentName.CREW: CrewAgent()}
    )
    assert interpreter.session.agent is AgentName.CREW
    events = [e async for e in interpreter.chat("go")]
    assert not [e for e in events if isinstance(e, AgentSwitched)]
    assert [m.agent for m in interpreter.session.history[1:]] == [
        AgentName.AGENT_EXECUTOR,  # the crew's doer
        None,  # the hand-over
        AgentName.THOUGHT,  # the crew's reviewer
    ]
    assert create_interpreter(model, workdir=tmp_path).session.agent is AgentName.AGENT_EXECUTOR


def test_a_role_the_interpreter_does_not_have_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match=r"unknown role 'OTHER'; choose one of: executor"):
        create_interpreter(ScriptedModel(), workdir=tmp_path, agent=AgentName.OTHER)
    with pytest.raises(InvalidRequest, match=r"choose one of: crew$"):
        create_interpreter(
            ScriptedModel(),
            workdir=tmp_path,
            agent=AgentName.AGENT_EXECUTOR,
            architectures={AgentName.CREW: CrewAgent()},
        )
