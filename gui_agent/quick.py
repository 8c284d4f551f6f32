"""Build a working interpreter in one call, and a synchronous wrapper for scripts."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from gui_agent.agents import AgentDeps, Architecture, default_architectures
from gui_agent.exceptions import InvalidRequest, UserError
from gui_agent.hooks import AgentHooks
from gui_agent.interpreter import Interpreter
from gui_agent.llm import LLMProvider
from gui_agent.memory import SlidingWindowMemory
from gui_agent.session import Session
from gui_agent.store.base import SessionStore as Store
from gui_agent.tools import PermissionPolicy, Tool, ToolRegistry, default_tools
from schema import (
    AgentName,
    ApprovalDecision,
    ApprovalRequested,
    AutoChatSettings,
    Event,
    PermissionMode,
    SessionSettings,
)


def create_interpreter(
    model: LLMProvider,
    *,
    tools: Iterable[Tool] = (),
    builtin_tools: bool = True,
    agent: AgentName | None = None,
    system_prompt: str | None = None,
    workdir: Path | None = None,
    permissions: Mapping[str, PermissionMode] | None = None,
    autochat: AutoChatSettings | None = None,
    architectures: Mapping[AgentName, Architecture] | None = None,
    hooks: AgentHooks | None = None,
    store: Store | None = None,
) -> Interpreter:
    """One session with your model and tools. Tools that change things ask first by default.

    `agent` is the role the session starts in: one of `architectures` (by default the
    built-in roles), or, when not given, the first of them (the executor by default).
    """
    roles = architectures or default_architectures()
    if agent is None:
        agent = next(iter(roles))
    elif agent not in roles:
        names = ", ".join(name.value for name in roles)
        raise InvalidRequest(f"no agent role {agent.value!r} to start in; available: {names}")
    registry = default_tools() if builtin_tools else ToolRegistry()
    for extra in tools:
        registry.add(extra)
    settings = SessionSettings()
    if system_prompt is not None:
        settings = settings.model_copy(update={"system_prompt": system_prompt})
    session = Session(settings=settings, agent=agent, autochat=autochat or AutoChatSettings())
    session.workdir = workdir or Path(tempfile.mkdtemp(prefix="gui-agent-"))
    deps = AgentDeps(
        provider=model,
        tools=registry,
        permissions=PermissionPolicy(permissions),
        memory=SlidingWindowMemory(),
        hooks=hooks or AgentHooks(),
    )
    return Interpreter(session, deps, architectures=roles, store=store)


def chat_sync(
    interpreter: Interpreter,
    text: str,
    *,
    approve: Callable[[ApprovalRequested], ApprovalDecision] | None = None,
) -> list[Event]:
    """Run one message to the end from synchronous code; refuses inside a running loop.

    Approval requests go to `approve`, which returns the decision. Without it nobody can
    answer them, so they are denied at once (the model is told it was refused by policy)
    rather than waiting out the approval timeout."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UserError("chat_sync() cannot run inside an event loop; use `async for` over chat()")

    async def collect() -> list[Event]:
        events: list[Event] = []
        async for event in interpreter.chat(text):
            events.append(event)
            if isinstance(event, ApprovalRequested):
                if approve is None:
                    interpreter.approve(
                        event.approval_id,
                        ApprovalDecision.DENY,
                        "nobody to ask: chat_sync() was given no approve function",
                        by="policy",
                    )
                else:
                    interpreter.approve(event.approval_id, approve(event))
        return events

    return asyncio.run(collect())
