"""THOUGHT: reasoning only. One model call, no tools; the reply is the agent's thinking out loud."""

from __future__ import annotations

from collections.abc import AsyncIterator

from gui_agent.agents.base import AgentDeps
from gui_agent.agents.executor import Turn, model_step
from gui_agent.session import Session
from schema import AgentName, Event, Message


class ThoughtAgent:
    def __init__(self, *, name: AgentName = AgentName.THOUGHT) -> None:
        self._name = name

    @property
    def name(self) -> AgentName:
        return self._name

    @property
    def description(self) -> str:
        return "Thinks the question through and answers without running any tool."

    async def run(self, session: Session, deps: AgentDeps, prompt: Message) -> AsyncIterator[Event]:
        async for event in model_step(
            session, deps, agent=self._name, turn=Turn(), use_tools=False
        ):
            yield event
