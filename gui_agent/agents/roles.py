"""The built-in roles, by name."""

from __future__ import annotations

from gui_agent.agents.base import Architecture
from gui_agent.agents.crew import CrewAgent
from gui_agent.agents.executor import ExecutorAgent
from gui_agent.agents.planner import PlannerAgent
from gui_agent.agents.supervisor import SupervisorAgent
from gui_agent.agents.thought import ThoughtAgent
from schema import AgentName


def default_architectures() -> dict[AgentName, Architecture]:
    """The built-in roles, executor first (the default)."""
    executor, thought = ExecutorAgent(), ThoughtAgent()
    supervisor = SupervisorAgent(workers={executor.name: executor, thought.name: thought})
    roles: list[Architecture] = [
        executor,
        PlannerAgent(executor=executor),
        supervisor,
        CrewAgent(),
        thought,
    ]
    return {role.name: role for role in roles}
