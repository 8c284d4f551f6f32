"""THOUGHT: reasoning only. One model call, no tools; the reply is the agent's thinking out loud."""

from __future__ import annotations

from collections.abc import AsyncIterator

from gui_agent.agents.base import AgentDeps
from gui_agent.agents.executor import memory_event, stream_reply
from gui_agent.session import Session
from schema import AgentName, Event, Message, MessageCompleted, ModelResponse, UsageReported


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
        messages, memory = memory_event(session, deps)
        yield memory
        response = ModelResponse()
        async for item in stream_reply(session, deps, messages, agent=self._name, use_tools=False):
            if isinstance(item, ModelResponse):
                response = item
                continue
            if isinstance(item, MessageCompleted):
                session.add(item.message)
            yield item
        session.usage = session.usage + response.usage
        yield UsageReported(turn=response.usage, total=session.usage)
