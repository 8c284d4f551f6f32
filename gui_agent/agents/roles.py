"""The built-in roles, and the names people give them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from gui_agent.agents.base import Architecture
from gui_agent.agents.crew import CrewAgent
from gui_agent.agents.executor import ExecutorAgent
from gui_agent.agents.planner import PlannerAgent
from gui_agent.agents.supervisor import SupervisorAgent
from gui_agent.agents.thought import ThoughtAgent
from gui_agent.exceptions import InvalidRequest
from schema import AgentName

__all__ = ["ROLE_NAMES", "default_architectures", "parse_role", "role_label"]


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


ROLE_NAMES: Final[Mapping[str, AgentName]] = {
    "executor": AgentName.AGENT_EXECUTOR,
    "planner": AgentName.LLM_PLANNER,
    "supervisor": AgentName.SUPERVISOR,
    "crew": AgentName.CREW,
    "thought": AgentName.THOUGHT,
}
"""The role names the README uses; the enum names (AGENT_EXECUTOR, ...) work as well."""


def role_label(agent: AgentName) -> str:
    """The name a person types for `agent`: `executor` for AGENT_EXECUTOR."""
    return next((name for name, role in ROLE_NAMES.items() if role is agent), agent.value.lower())


def parse_role(text: str, available: Iterable[AgentName]) -> AgentName:
    """The role a person named (`planner`, `LLM_PLANNER`, any case), or InvalidRequest
    naming the roles this chat offers."""
    offered = list(available)
    key = text.strip().lower()
    role = ROLE_NAMES.get(key) or next((a for a in AgentName if a.value.lower() == key), None)
    if role is None or role not in offered:
        choices = ", ".join(role_label(agent) for agent in offered)
        raise InvalidRequest(f"unknown role {text!r}; choose one of: {choices}")
    return role
