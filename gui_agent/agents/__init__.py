"""Agent roles (architectures) and the registry of the built-in ones."""

from gui_agent.agents.base import AgentDeps, Architecture
from gui_agent.agents.executor import ExecutorAgent
from gui_agent.agents.thought import ThoughtAgent
from schema import AgentName


def default_architectures() -> dict[AgentName, Architecture]:
    """The built-in roles, executor first (the default)."""
    roles: list[Architecture] = [ExecutorAgent(), ThoughtAgent()]
    return {role.name: role for role in roles}


__all__ = ["AgentDeps", "Architecture", "ExecutorAgent", "ThoughtAgent", "default_architectures"]
