"""THOUGHT under AutoChat: each automatic turn asks the agent to call `task_complete` when
the goal is reached, so that is the one tool it is offered then (and only then); calling it
ends AutoChat, as with the executor."""

from __future__ import annotations

from pathlib import Path

from connectors.scripted import ScriptedModel, call
from gui_agent.agents import ThoughtAgent
from gui_agent.quick import create_interpreter
from schema import AgentName, AutoChatSettings, AutoChatStopped, AutoChatStopReason


async def test_thought_under_autochat_can_declare_the_task_complete(tmp_path: Path) -> None:
    model = ScriptedModel(
        ["Let me think: 6 × 7 is 42.", call("task_complete", summary="42"), "unused"]
    )
    interpreter = create_interpreter(
        model,
        workdir=tmp_path,
        autochat=AutoChatSettings(enabled=True, max_turns=5),
        architectures={AgentName.THOUGHT: ThoughtAgent()},
        agent=AgentName.THOUGHT,
    )
    events = [event async for event in interpreter.chat("What is 6 × 7?")]
    (end,) = [e for e in events if isinstance(e, AutoChatStopped)]
    assert end.reason is AutoChatStopReason.TASK_COMPLETE and end.turns == 1
    assert "42" in end.detail
    first, automatic = model.requests[0], model.requests[1]
    assert first.tools == (), "the person's own turn: no tool, as THOUGHT always is"
    assert [schema.name for schema in automatic.tools] == ["task_complete"]
    assert len(model.requests) == 2
    await interpreter.close()
