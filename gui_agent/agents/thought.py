"""THOUGHT: reasoning only. One model call, no tools; the reply is the agent's thinking out loud.

Under AutoChat its one tool is `task_complete`: each automatic turn's prompt asks the agent
to call it when the goal is reached, and without it a thinking agent could only ever stop at
a limit."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

from gui_agent.agents.base import AgentDeps
from gui_agent.agents.executor import ExecutorAgent, Turn, model_step
from gui_agent.session import Session
from gui_agent.tools import ToolRegistry, task_complete
from schema import AgentName, Event, Message


class ThoughtAgent:
    def __init__(self, *, name: AgentName = AgentName.THOUGHT) -> None:
        self._name = name
        self._done = ToolRegistry([task_complete])

    @property
    def name(self) -> AgentName:
        return self._name

    @property
    def description(self) -> str:
        return "Thinks the question through and answers without running any tool."

    async def run(self, session: Session, deps: AgentDeps, prompt: Message) -> AsyncIterator[Event]:
        if not prompt.metadata.get("autochat"):
            async for event in model_step(
                session, deps, agent=self._name, turn=Turn(), use_tools=False
            ):
                yield event
            return
        own = dataclasses.replace(deps, tools=self._done)
        turn = Turn()
        async for event in model_step(session, own, agent=self._name, turn=turn):
            yield event
        calls = turn.last_response().tool_calls
        if calls:  # task_complete (anything else is answered as a tool it does not have)
            async for event in ExecutorAgent(name=self._name).run_tools(session, own, calls):
                yield event
