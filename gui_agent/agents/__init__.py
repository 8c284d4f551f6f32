"""Agent roles (architectures) and the registry of the built-in ones."""

from gui_agent.agents.base import AgentDeps, Architecture
from gui_agent.agents.crew import CrewAgent, CrewMember
from gui_agent.agents.executor import ExecutorAgent
from gui_agent.agents.planner import PlannerAgent
from gui_agent.agents.roles import default_architectures
from gui_agent.agents.supervisor import SupervisorAgent
from gui_agent.agents.thought import ThoughtAgent

__all__ = [
    "AgentDeps",
    "Architecture",
    "CrewAgent",
    "CrewMember",
    "ExecutorAgent",
    "PlannerAgent",
    "SupervisorAgent",
    "ThoughtAgent",
    "default_architectures",
]
