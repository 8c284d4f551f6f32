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

# The names below that live outside `exceptions` are loaded on first use (PEP 562), so that
# importing one light module of the package (`gui_agent.changes` for the API client, say)
# does not load the interpreter, the store and the tools with it. Type checkers read the
# imports under TYPE_CHECKING; `from gui_agent import X` works for every X in `__all__`.
# The exceptions cost nothing to import, so they stay eager. `typing` comes in as a module,
# and the loaders under private names, so that `dir(gui_agent)` names nothing public but
# `__all__` (and submodules). How the names load: lazy_names.py.

import typing

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
from gui_agent.lazy_names import listing as _listing
from gui_agent.lazy_names import loader as _loader

if typing.TYPE_CHECKING:
    from gui_agent.agents import (
        AgentDeps,
        Architecture,
        ExecutorAgent,
        ThoughtAgent,
        default_architectures,
    )
    from gui_agent.approvals import ApprovalBroker, Verdict
    from gui_agent.events import EventHub, Subscription
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

_LAZY = {
    "AgentDeps": "gui_agent.agents",
    "AgentHooks": "gui_agent.hooks",
    "ApprovalBroker": "gui_agent.approvals",
    "Architecture": "gui_agent.agents",
    "ContextWindow": "gui_agent.memory",
    "EventHub": "gui_agent.events",
    "ExecutorAgent": "gui_agent.agents",
    "Interpreter": "gui_agent.interpreter",
    "LLMProvider": "gui_agent.llm",
    "Memory": "gui_agent.memory",
    "ModelCatalog": "gui_agent.llm",
    "PermissionPolicy": "gui_agent.tools",
    "Session": "gui_agent.session",
    "SessionManager": "gui_agent.manager",
    "SlidingWindowMemory": "gui_agent.memory",
    "StaticCatalog": "gui_agent.llm",
    "StreamWrapper": "gui_agent.stream",
    "Subscription": "gui_agent.events",
    "ThoughtAgent": "gui_agent.agents",
    "TokenCounter": "gui_agent.tokens",
    "Tool": "gui_agent.tools",
    "ToolContext": "gui_agent.tools",
    "ToolOutput": "gui_agent.tools",
    "ToolRegistry": "gui_agent.tools",
    "TracingHooks": "gui_agent.telemetry",
    "Verdict": "gui_agent.approvals",
    "chat_sync": "gui_agent.quick",
    "counter_for_model": "gui_agent.tokens",
    "create_interpreter": "gui_agent.quick",
    "default_architectures": "gui_agent.agents",
    "default_tools": "gui_agent.tools",
    "tool": "gui_agent.tools",
}

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


if not typing.TYPE_CHECKING:
    # Hidden from type checkers, which would otherwise take any misspelt name imported from
    # here for an `Any`; they see the real names in the imports above.
    __getattr__ = _loader(__name__, _LAZY, globals())

__dir__ = _listing(globals(), __all__)
