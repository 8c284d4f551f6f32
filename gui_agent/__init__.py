"""GuiAgent: the core of a browser chat application for LLM agents.

Build an agent with your own tools and drive it from Python::

    from gui_agent import create_interpreter, tool
    from connectors.scripted import ScriptedModel, call

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b

    agent = create_interpreter(ScriptedModel([call("add", a=2, b=3), "5"]), tools=[add])
    async for event in agent.chat("What is 2 + 3?"):
        ...
"""

from gui_agent.agents import (
    AgentDeps,
    Architecture,
    ExecutorAgent,
    ThoughtAgent,
    default_architectures,
)
from gui_agent.approvals import ApprovalBroker, Verdict
from gui_agent.events import EventHub, Subscription
from gui_agent.exceptions import (
    AuthError,
    CircuitOpen,
    ConfigError,
    Conflict,
    FellBehind,
    GuiAgentError,
    IllegalTransition,
    InvalidRequest,
    ModelAuthError,
    ModelConnectionError,
    ModelError,
    ModelNotFound,
    ModelRateLimited,
    ModelResponseError,
    ModelServerError,
    ModelTimeout,
    PathEscape,
    RunError,
    SessionNotFound,
    StoreError,
    StoreLocked,
    StoreVersionError,
    ToolDefinitionError,
    ToolExecutionError,
    UserError,
)
from gui_agent.hooks import AgentHooks
from gui_agent.interpreter import Interpreter
from gui_agent.llm import LLMProvider, ModelCatalog, StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.memory import ContextWindow, Memory, SlidingWindowMemory
from gui_agent.quick import chat_sync, create_interpreter
from gui_agent.session import Session
from gui_agent.stream import StreamWrapper
from gui_agent.telemetry import TracingHooks
from gui_agent.tokens import TokenCounter, counter_for_model
from gui_agent.tools import (
    PermissionPolicy,
    Tool,
    ToolContext,
    ToolOutput,
    ToolRegistry,
    default_tools,
    tool,
)

__all__ = [
    "AgentDeps",
    "AgentHooks",
    "ApprovalBroker",
    "Architecture",
    "AuthError",
    "CircuitOpen",
    "ConfigError",
    "Conflict",
    "ContextWindow",
    "EventHub",
    "ExecutorAgent",
    "FellBehind",
    "GuiAgentError",
    "IllegalTransition",
    "Interpreter",
    "InvalidRequest",
    "LLMProvider",
    "Memory",
    "ModelAuthError",
    "ModelCatalog",
    "ModelConnectionError",
    "ModelError",
    "ModelNotFound",
    "ModelRateLimited",
    "ModelResponseError",
    "ModelServerError",
    "ModelTimeout",
    "PathEscape",
    "PermissionPolicy",
    "RunError",
    "Session",
    "SessionManager",
    "SessionNotFound",
    "SlidingWindowMemory",
    "StaticCatalog",
    "StoreError",
    "StoreLocked",
    "StoreVersionError",
    "StreamWrapper",
    "Subscription",
    "ThoughtAgent",
    "TokenCounter",
    "Tool",
    "ToolContext",
    "ToolDefinitionError",
    "ToolExecutionError",
    "ToolOutput",
    "ToolRegistry",
    "TracingHooks",
    "UserError",
    "Verdict",
    "chat_sync",
    "counter_for_model",
    "create_interpreter",
    "default_architectures",
    "default_tools",
    "tool",
]
