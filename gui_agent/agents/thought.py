"""THOUGHT: reasoning only. One model call, no tools; the reply is the agent's thinking out loud."""

from __future__ import annotations

from collections.abc import AsyncIterator

from gui_agent.agents.base import AgentDeps
from gui_agent.agents.executor import model_step
from gui_agent.session import Session
from schema import AgentName, Event, Message, ModelResponse, Usage


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
        async for item in model_step(
            session, deps, agent=self._name, turn_usage=Usage(), use_tools=False
        ):
            if not isinstance(item, ModelResponse):
                yield item
